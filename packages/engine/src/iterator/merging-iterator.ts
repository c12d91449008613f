import type { InternalIterator } from '../base/internal-iterator.js';
import { compareInternalAt } from '../base/internal-key.js';

const EMPTY = new Uint8Array(0);

/**
 * Merges sorted children (memtables, tables, levels) into one cursor in internal-key order, both directions, with a
 * binary heap of child indices: a min-heap moving forward, a max-heap moving backward. A step costs one move of one
 * child and O(log k) comparisons, done in place on the children's current keys; nothing is allocated per step.
 *
 * Equal internal keys in two children (which the engine never produces: sequence numbers are unique) come out in
 * child order, lower index first when moving forward.
 *
 * Changing direction repositions every other child around the current key, as LevelDB's MergingIterator does:
 * forward after backward seeks each child to the current key (stepping past an equal key); backward after forward
 * seeks each child to the current key and steps back (or goes to its last entry). That costs a seek per child, so it
 * is meant for occasional direction changes, not alternating steps.
 *
 * The merging iterator owns its children: `close()` closes them all.
 */
export class MergingIterator implements InternalIterator {
  private readonly children: InternalIterator[];
  /** Current key view of each child (EMPTY when the child is not valid), refreshed after each move of that child. */
  private readonly keys: Uint8Array[];
  private readonly heap: Int32Array;
  private size = 0;
  private forward = true;
  private saved: Uint8Array = new Uint8Array(64);
  private closed = false;

  constructor(children: InternalIterator[]) {
    this.children = children.slice();
    this.keys = this.children.map(() => EMPTY);
    this.heap = new Int32Array(Math.max(1, children.length));
  }

  valid(): boolean {
    return this.size > 0;
  }

  seekToFirst(): void {
    for (const c of this.children) c.seekToFirst();
    this.rebuild(true);
  }

  seekToLast(): void {
    for (const c of this.children) c.seekToLast();
    this.rebuild(false);
  }

  seek(target: Uint8Array): void {
    for (const c of this.children) c.seek(target);
    this.rebuild(true);
  }

  next(): void {
    const cur = this.heap[0]!;
    if (!this.forward) {
      // Every other child is at an entry < key(); move each to the first entry > key().
      const key = this.saveCurrentKey();
      for (let i = 0; i < this.children.length; i++) {
        if (i === cur) continue;
        const c = this.children[i]!;
        c.seek(key);
        if (c.valid() && this.compareToSaved(c.key(), key.length) === 0) c.next();
      }
      this.children[cur]!.next();
      this.rebuild(true);
      return;
    }
    this.children[cur]!.next();
    this.refreshRoot();
  }

  prev(): void {
    const cur = this.heap[0]!;
    if (this.forward) {
      // Every other child is at an entry > key(); move each to the last entry < key().
      const key = this.saveCurrentKey();
      for (let i = 0; i < this.children.length; i++) {
        if (i === cur) continue;
        const c = this.children[i]!;
        c.seek(key);
        if (c.valid()) c.prev();
        else c.seekToLast();
      }
      this.children[cur]!.prev();
      this.rebuild(false);
      return;
    }
    this.children[cur]!.prev();
    this.refreshRoot();
  }

  key(): Uint8Array {
    return this.keys[this.heap[0]!]!;
  }

  value(): Uint8Array {
    return this.children[this.heap[0]!]!.value();
  }

  valueLength(): number {
    return this.children[this.heap[0]!]!.valueLength();
  }

  valueBuffer(): Uint8Array {
    return this.children[this.heap[0]!]!.valueBuffer();
  }

  valueOffset(): number {
    return this.children[this.heap[0]!]!.valueOffset();
  }

  /** Closes every child. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.size = 0;
    for (const c of this.children) c.close();
  }

  /** Copies the current key into the instance's scratch buffer; returns a view of it. */
  private saveCurrentKey(): Uint8Array {
    const k = this.keys[this.heap[0]!]!;
    if (this.saved.length < k.length) this.saved = new Uint8Array(k.length * 2);
    this.saved.set(k);
    return this.saved.subarray(0, k.length);
  }

  private compareToSaved(k: Uint8Array, len: number): number {
    return compareInternalAt(k, 0, k.length, this.saved, 0, len);
  }

  /** Re-reads every child's key and heapifies in the given direction. */
  private rebuild(forward: boolean): void {
    this.forward = forward;
    let n = 0;
    for (let i = 0; i < this.children.length; i++) {
      const c = this.children[i]!;
      if (c.valid()) {
        this.keys[i] = c.key();
        this.heap[n++] = i;
      } else {
        this.keys[i] = EMPTY;
      }
    }
    this.size = n;
    for (let i = (n >>> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** After the root child moved: refresh its key and restore the heap. */
  private refreshRoot(): void {
    const i = this.heap[0]!;
    const c = this.children[i]!;
    if (c.valid()) {
      this.keys[i] = c.key();
    } else {
      this.keys[i] = EMPTY;
      this.size--;
      this.heap[0] = this.heap[this.size]!;
    }
    if (this.size > 1) this.siftDown(0);
  }

  /** True when child a comes before child b in the current direction. */
  private before(a: number, b: number): boolean {
    const ka = this.keys[a]!;
    const kb = this.keys[b]!;
    const c = compareInternalAt(ka, 0, ka.length, kb, 0, kb.length);
    if (c !== 0) return this.forward ? c < 0 : c > 0;
    return this.forward ? a < b : a > b;
  }

  private siftDown(at: number): void {
    const heap = this.heap;
    const n = this.size;
    const item = heap[at]!;
    for (;;) {
      const l = 2 * at + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.before(heap[r]!, heap[l]!) ? r : l;
      if (!this.before(heap[child]!, item)) break;
      heap[at] = heap[child]!;
      at = child;
    }
    heap[at] = item;
  }
}
