/**
 * A positioned cursor over a memtable (see InternalIterator). Moving allocates nothing: the current key is copied
 * into an instance-owned buffer, whose view `key()` returns is reused while keys keep one length (as a block
 * iterator's is), and a value's place in the arena is `valueBuffer()`/`valueOffset()`, for copying it out without a
 * view. `value()` is a view into the arena, valid for the memtable's life (arenas never move).
 *
 * The iterator pins its memtable until `close()`, so that a flushed memtable's arenas are not reused under it.
 */
import { copyBytes } from '../base/coding.js';
import type { InternalIterator } from '../base/internal-iterator.js';

/**
 * What the cursor reads of a memtable (memtable.ts, the one implementation), named here so that the memtable can make
 * its cursors without this file importing it back. Nodes are word offsets in the skiplist; 0 is none.
 */
export interface MemtableNodes {
  /** The byte arena keys and values live in. */
  readonly bytes: Uint8Array;
  /** The node after node `n` (after the head when `n` is 0), or 0. */
  nodeAfter(n: number): number;
  /** The last node < the internal key `ikey`, or 0. */
  nodeBefore(ikey: Uint8Array): number;
  /** The first node >= the internal key `ikey`, or 0. */
  nodeAtOrAfter(ikey: Uint8Array): number;
  /** The last node, or 0 when empty. */
  lastNode(): number;
  /** Where node `n`'s internal key starts in `bytes`; its value follows the key. */
  keyOffsetOf(n: number): number;
  /** Length of node `n`'s internal key. */
  keyLengthOf(n: number): number;
  /** Length of node `n`'s value. */
  valueLengthOf(n: number): number;
  /** The value of node `n`, as a view into the arena. */
  valueOf(n: number): Uint8Array;
  /** Ends the pin an open cursor holds on the arenas. */
  releaseReader(): void;
}

export class MemtableIterator implements InternalIterator {
  private readonly mem: MemtableNodes;
  private node = 0;
  private open = true;
  private keyBuf = new Uint8Array(64);
  /** `keyBuf[0..length)` as `key()` last handed it out. */
  private keyView = this.keyBuf.subarray(0, 0);

  /** Made by `Memtable.iterator()`, which counts it as a reader. */
  constructor(mem: MemtableNodes) {
    this.mem = mem;
  }

  valid(): boolean {
    return this.node !== 0;
  }

  seekToFirst(): void {
    this.node = this.mem.nodeAfter(0);
  }

  seekToLast(): void {
    this.node = this.mem.lastNode();
  }

  seek(target: Uint8Array): void {
    this.node = this.mem.nodeAtOrAfter(target);
  }

  next(): void {
    this.node = this.mem.nodeAfter(this.node);
  }

  prev(): void {
    this.node = this.mem.nodeBefore(this.key());
  }

  key(): Uint8Array {
    const mem = this.mem;
    const n = this.node;
    const len = mem.keyLengthOf(n);
    if (this.keyBuf.length < len) {
      this.keyBuf = new Uint8Array(Math.max(len, this.keyBuf.length * 2));
      this.keyView = this.keyBuf.subarray(0, 0);
    }
    copyBytes(mem.bytes, mem.keyOffsetOf(n), len, this.keyBuf, 0);
    if (this.keyView.length !== len) this.keyView = this.keyBuf.subarray(0, len);
    return this.keyView;
  }

  value(): Uint8Array {
    return this.mem.valueOf(this.node);
  }

  valueLength(): number {
    return this.mem.valueLengthOf(this.node);
  }

  valueBuffer(): Uint8Array {
    return this.mem.bytes;
  }

  valueOffset(): number {
    const n = this.node;
    return this.mem.keyOffsetOf(n) + this.mem.keyLengthOf(n);
  }

  close(): void {
    this.node = 0;
    if (this.open) {
      this.open = false;
      this.mem.releaseReader();
    }
  }
}
