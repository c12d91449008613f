/**
 * The memtable: a skiplist of internal keys in one byte arena (skiplist.ts), with a hash index for point gets. A
 * frozen memtable can be handed to a worker thread (`share()` copies the arenas, `fromShared()` reads such a copy) to
 * write a level-0 table, and a flushed one's arenas go to the next memtable (`reuse`). See FORMAT.md "Memtable".
 */
import { TRAILER_SIZE } from '../base/internal-key.js';
import { bloomHash } from '../table/bloom.js';
import { MemtableIterator } from './memtable-iterator.js';
import { type ArenaUse, MAX_HEIGHT, NODE_FIXED, SkipList } from './skiplist.js';

// The point-get hash index holds at most one slot per entry; an entry takes at least NODE_FIXED + 1 node words, which
// bounds the entries, and slots number at least 1.5 times that bound (a load of at most 2/3 for linear probing).
const MIN_INDEX_SLOTS = 256;

/** What `get` found. */
export enum LookupResult {
  NotFound = 0,
  Value = 1,
  Deleted = 2,
}

/** Arena copies a flush worker hands back for the next `share()`. */
export interface SharedArenas {
  bytes: ArrayBuffer;
  nodes: ArrayBuffer;
}

/** What `share()` hands to a worker: copies of the arenas and how much of them is used. */
export interface SharedMemtable extends ArenaUse {
  bytes: ArrayBuffer;
  nodes: ArrayBuffer;
}

export class Memtable extends SkipList {
  /**
   * Point-get index: an open-addressing hash table (linear probing) from user key to the node of its newest entry.
   * Slot i is `slots[2i]`, a node word offset (0: empty), and `slots[2i + 1]`, the bloomHash of its user key: one
   * cache line per probe. A get whose sequence
   * sees the newest entry is answered in about one probe, a key absent from the memtable by reaching an empty slot;
   * only a snapshot older than the newest entry walks the skiplist. Empty for a read-only shared copy.
   */
  private readonly slots: Int32Array;
  /** Word offset of the first node not yet in the hash index. */
  private indexedTo = NODE_FIXED + MAX_HEIGHT;
  /** Set by `get` when it returns `LookupResult.Value`: where the value sits in `bytes`. */
  valueOffset = 0;
  valueLength = 0;
  /** Sequence of the entry `get` found (value or deletion). */
  foundSequence = 0;

  /**
   * An empty memtable able to hold about `capacity` bytes of entries (keys, values and skiplist nodes). Use
   * `hasRoom` before each `add`.
   */
  /**
   * `reuse`: a retired memtable (flushed, no open iterator) whose arenas are taken over if large enough. Fresh
   * arenas cost a page fault per 4 KiB on first touch, which is a good part of an insert's cost.
   */
  constructor(capacity: number, shared?: SharedMemtable, reuse?: Memtable) {
    if (shared) {
      super(new Uint8Array(shared.bytes), new Uint32Array(shared.nodes), shared);
      this.slots = new Int32Array(0);
      return;
    }
    // Keys and values get `capacity` bytes; nodes average 8 + 4/3 words.
    // Plain ArrayBuffers, not SharedArrayBuffers: V8 reads and writes SAB-backed typed arrays several times slower
    // (measured here: 600 ns against 150 ns per insert), and only a frozen memtable is ever shared (`share()`).
    // Uninitialised memory (allocUnsafeSlow: no memset of megabytes per memtable): nothing is read before it is
    // written, except the head node, zeroed by the skiplist. Nodes get as many bytes as entries: a node takes
    // 24 + 4 * height bytes against at least 8 bytes of entry, and both count against the write buffer size.
    const words = Math.ceil(capacity / 4) + NODE_FIXED + MAX_HEIGHT;
    const slotCount = Math.max(MIN_INDEX_SLOTS, 2 ** Math.ceil(Math.log2((words / (NODE_FIXED + 1)) * 1.5)));
    if (reuse && !reuse.inUse && reuse.bytes.length === capacity && reuse.nodes.length === words) {
      super(reuse.bytes, reuse.nodes);
      this.slots = reuse.slots;
      this.slots.fill(0);
      reuse.retired = true;
    } else {
      super(
        new Uint8Array(Buffer.allocUnsafeSlow(capacity).buffer, 0, capacity),
        new Uint32Array(Buffer.allocUnsafeSlow(words * 4).buffer, 0, words),
      );
      this.slots = new Int32Array(slotCount * 2);
    }
  }

  /** Open iterators over this memtable (their views point into the arenas). */
  private readers = 0;
  /** Set once another memtable took over the arenas: nothing may read this one any more. */
  private retired = false;

  /** True while an iterator is open over it (its arenas must not be reused). */
  get inUse(): boolean {
    return this.readers > 0 || this.retired;
  }

  /** @internal Called by MemtableIterator. */
  releaseReader(): void {
    this.readers--;
  }

  /** A read-only memtable over arenas another thread shared. */
  static fromShared(shared: SharedMemtable): Memtable {
    return new Memtable(0, shared);
  }

  /**
   * What a worker needs to read this memtable: copies of the used part of the arenas (moved, not cloned, to the
   * worker). For a frozen memtable. `into`: buffers a finished flush handed back (see `JobResult.arenas`), used when
   * large enough: fresh ones fault in page by page as the copy first touches them, which costs more than the copy.
   * Fresh buffers are sized for the whole arenas so that they can serve any later flush.
   */
  share(into?: SharedArenas): SharedMemtable {
    const nodeBytes = this.nodesUsed * 4;
    const fits = into !== undefined && into.bytes.byteLength >= this.bytesUsed && into.nodes.byteLength >= nodeBytes;
    // allocUnsafeSlow: no memset of megabytes that the copy overwrites anyway.
    const bytes = fits ? into.bytes : Buffer.allocUnsafeSlow(Math.max(this.bytes.length, 1)).buffer;
    const nodes = fits ? into.nodes : Buffer.allocUnsafeSlow(this.nodes.length * 4).buffer;
    new Uint8Array(bytes).set(this.bytes.subarray(0, this.bytesUsed));
    new Uint8Array(nodes).set(new Uint8Array(this.nodes.buffer, this.nodes.byteOffset, nodeBytes));
    return {
      bytes,
      nodes,
      bytesUsed: this.bytesUsed,
      nodesUsed: this.nodesUsed,
      count: this.count,
    };
  }

  /**
   * Brings the hash index up to date: indexes the nodes added since the last get, in arena order (nodes are laid
   * out in insertion order). Lazy, so that a memtable only written (a bulk load) never pays for it.
   */
  private catchUpIndex(): void {
    const bytes = this.bytes;
    let n = this.indexedTo;
    const end = this.nodesUsed;
    while (n < end) {
      this.indexNode(n, bytes, this.keyOffsetOf(n), this.userKeyLengthOf(n));
      n = this.nodeInArenaAfter(n);
    }
    this.indexedTo = n;
  }

  /** Points the hash index's slot of user key `src[ks, ks+kl)` at node `n`, if it is the key's newest entry. */
  private indexNode(n: number, src: Uint8Array, ks: number, kl: number): void {
    const h = bloomHash(src, ks, kl) | 0;
    const slots = this.slots;
    const mask = slots.length - 2;
    for (let i = (h << 1) & mask; ; i = (i + 2) & mask) {
      const m = slots[i]!;
      if (m === 0) {
        slots[i] = n;
        slots[i + 1] = h;
        return;
      }
      if (slots[i + 1] === h && this.sameUserKey(m, src, ks, kl)) {
        // Nodes are indexed in insertion order and sequences grow for a key; the check keeps the index right anyway.
        if (this.nodeSequence(n) > this.nodeSequence(m)) slots[i] = n;
        return;
      }
    }
  }

  /**
   * Looks up the newest entry of user key `src[ks, ks+kl)` with sequence <= `seq`. On `LookupResult.Value`, the value
   * is `bytes[valueOffset, valueOffset + valueLength)` (valid for the memtable's life: arenas never move). `hash`: the
   * key's bloomHash, when the caller has it (one hash serves every memtable and table of a lookup).
   */
  get(src: Uint8Array, ks: number, kl: number, seq: number, hash?: number): LookupResult {
    const slots = this.slots;
    if (slots.length > 0) {
      if (this.indexedTo !== this.nodesUsed) this.catchUpIndex();
      const h = (hash ?? bloomHash(src, ks, kl)) | 0;
      const mask = slots.length - 2;
      for (let i = (h << 1) & mask; ; i = (i + 2) & mask) {
        const m = slots[i]!;
        if (m === 0) return LookupResult.NotFound;
        if (slots[i + 1] === h && this.sameUserKey(m, src, ks, kl)) {
          // The newest entry answers if the reader's sequence sees it; an older snapshot walks the skiplist.
          if (this.nodeSequence(m) <= seq) return this.found(m, kl);
          break;
        }
      }
    }
    const n = this.seekVisible(src, ks, kl, seq);
    if (n === 0) return LookupResult.NotFound;
    if (!this.sameUserKey(n, src, ks, kl)) return LookupResult.NotFound;
    return this.found(n, kl);
  }

  /** The result of a get that found node `n`, whose user key has `kl` bytes. */
  private found(n: number, kl: number): LookupResult {
    this.foundSequence = this.nodeSequence(n);
    if (this.isDeletion(n)) return LookupResult.Deleted;
    this.valueOffset = this.keyOffsetOf(n) + kl + TRAILER_SIZE;
    this.valueLength = this.valueLengthOf(n);
    return LookupResult.Value;
  }

  /** A cursor over the entries in internal-key order. The caller closes it (nothing to free, but by contract). */
  iterator(): MemtableIterator {
    this.readers++;
    return new MemtableIterator(this);
  }
}
