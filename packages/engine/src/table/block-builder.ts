import { putVarint32, varint32Length, writeU32LE } from '../base/coding.js';
import { invalidArgument } from '../base/errors.js';

/**
 * Builds the contents of one SSTable block (data, index, metaindex or properties block): a run of prefix-compressed
 * entries followed by the restart array. The builder owns one growing buffer that it reuses from block to block.
 *
 * Layout (see FORMAT.md, "Blocks"):
 *
 *   entry    := shared: varint32 | unshared: varint32 | valueLength: varint32 | key[shared..] | value
 *   contents := entry* | restart: uint32le * numRestarts | numRestarts: uint32le
 *
 * `shared` counts the bytes this key shares with the previous key; it is 0 at every restart point, which comes every
 * `restartInterval` entries, so that a reader can binary-search the restart array and read those keys in place.
 * The builder does not check key order: the table builder does, with the comparator the block is read with.
 */
export class BlockBuilder {
  private readonly restartInterval: number;
  private buf: Uint8Array;
  private pos = 0;
  private restarts: Uint32Array;
  private numRestarts = 1; // restarts[0] = 0: the first entry is always a restart point
  private counter = 0;
  private entryCount = 0;
  private lastKey: Uint8Array;
  private lastKeyLen = 0;

  /** `restartInterval` >= 1: entries between restart points (16 for data blocks, 1 for the index block). */
  constructor(restartInterval: number, initialCapacity = 8192) {
    if (!Number.isInteger(restartInterval) || restartInterval < 1) {
      throw invalidArgument(`restartInterval must be an integer >= 1, got ${restartInterval}`);
    }
    this.restartInterval = restartInterval;
    this.buf = new Uint8Array(initialCapacity);
    this.restarts = new Uint32Array(64);
    this.lastKey = new Uint8Array(64);
  }

  /** Number of entries added since the last reset. */
  get entries(): number {
    return this.entryCount;
  }

  /** True when no entry was added since the last reset. */
  get empty(): boolean {
    return this.entryCount === 0;
  }

  /** Size the block's contents would have if finished now (entries + restart array), without the trailer. */
  sizeEstimate(): number {
    return this.pos + this.numRestarts * 4 + 4;
  }

  /** Appends an entry. Keys must arrive in the order the block will be read in. */
  add(key: Uint8Array, value: Uint8Array): void {
    let shared = 0;
    if (this.counter < this.restartInterval) {
      const lim = Math.min(this.lastKeyLen, key.length);
      const last = this.lastKey;
      while (shared < lim && last[shared] === key[shared]) shared++;
    } else {
      this.startRestart();
    }
    const unshared = key.length - shared;
    const need =
      varint32Length(shared) + varint32Length(unshared) + varint32Length(value.length) + unshared + value.length;
    this.ensure(need);
    const buf = this.buf;
    let at = putVarint32(buf, this.pos, shared);
    at = putVarint32(buf, at, unshared);
    at = putVarint32(buf, at, value.length);
    if (unshared < 32) {
      for (let i = shared; i < key.length; i++) buf[at++] = key[i]!;
    } else {
      buf.set(shared === 0 ? key : key.subarray(shared), at);
      at += unshared;
    }
    if (value.length < 32) {
      for (let i = 0; i < value.length; i++) buf[at++] = value[i]!;
    } else {
      buf.set(value, at);
      at += value.length;
    }
    this.pos = at;

    if (this.lastKey.length < key.length) {
      const grown = new Uint8Array(Math.max(key.length, this.lastKey.length * 2));
      grown.set(this.lastKey.subarray(0, shared));
      this.lastKey = grown;
    }
    const last = this.lastKey;
    for (let i = shared; i < key.length; i++) last[i] = key[i]!;
    this.lastKeyLen = key.length;
    this.counter++;
    this.entryCount++;
  }

  /**
   * `add` of the key `src[ko..ko+klen)` and value `vsrc[vo..vo+vlen)`, read in place, for a caller that knows how
   * many bytes (`common`) the key shares with the previous key added. The builder keeps no copy of keys added this
   * way: an `add` after it shares nothing with them (always valid, just less compact).
   */
  addAt(src: Uint8Array, ko: number, klen: number, common: number, vsrc: Uint8Array, vo: number, vlen: number): void {
    let shared = 0;
    if (this.counter < this.restartInterval) {
      if (this.entryCount > 0) shared = common;
    } else {
      this.startRestart();
    }
    const unshared = klen - shared;
    this.ensure(15 + unshared + vlen);
    const buf = this.buf;
    let at = this.pos;
    if ((shared | unshared | vlen) < 0x80) {
      buf[at] = shared;
      buf[at + 1] = unshared;
      buf[at + 2] = vlen;
      at += 3;
    } else {
      at = putVarint32(buf, at, shared);
      at = putVarint32(buf, at, unshared);
      at = putVarint32(buf, at, vlen);
    }
    const kFrom = ko + shared;
    if (unshared < 32) for (let i = 0; i < unshared; i++) buf[at + i] = src[kFrom + i]!;
    else buf.set(src.subarray(kFrom, ko + klen), at);
    at += unshared;
    if (vlen < 32) for (let i = 0; i < vlen; i++) buf[at + i] = vsrc[vo + i]!;
    else buf.set(vsrc.subarray(vo, vo + vlen), at);
    this.pos = at + vlen;
    this.lastKeyLen = 0;
    this.counter++;
    this.entryCount++;
  }

  /**
   * Appends the restart array and returns the finished contents as a view of the builder's buffer, valid until the
   * next `add` or `reset`.
   */
  finish(): Uint8Array {
    const n = this.numRestarts;
    this.ensure(n * 4 + 4);
    const buf = this.buf;
    let at = this.pos;
    for (let i = 0; i < n; i++) {
      writeU32LE(buf, at, this.restarts[i]!);
      at += 4;
    }
    writeU32LE(buf, at, n);
    at += 4;
    this.pos = at;
    return buf.subarray(0, at);
  }

  /** Starts a new, empty block, keeping the buffers. */
  reset(): void {
    this.pos = 0;
    this.numRestarts = 1;
    this.restarts[0] = 0;
    this.counter = 0;
    this.entryCount = 0;
    this.lastKeyLen = 0;
  }

  /** The next entry is a restart point: its key is stored whole. */
  private startRestart(): void {
    if (this.numRestarts === this.restarts.length) {
      const grown = new Uint32Array(this.restarts.length * 2);
      grown.set(this.restarts);
      this.restarts = grown;
    }
    this.restarts[this.numRestarts++] = this.pos;
    this.counter = 0;
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.pos + extra, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}
