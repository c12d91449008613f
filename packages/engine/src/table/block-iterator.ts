/**
 * The cursor over one decoded Block (block.ts). Keys are compared as internal keys (user key bytewise ascending, then
 * the 8-byte trailer descending) in place, with offsets, so that a seek allocates nothing.
 */
import { CorruptionError } from '../base/errors.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import { TRAILER_SIZE } from '../base/internal-key.js';
import { Block } from './block.js';

// Int32 fields per entry in the reverse-step cache.
const RC_FIELDS = 5;

// An empty block with a single restart (what BlockBuilder finishes with no entry): the state of an iterator that has
// not been pointed at a block yet.
const EMPTY_BLOCK_BYTES = new Uint8Array([0, 0, 0, 0, 1, 0, 0, 0]);

/**
 * InternalIterator over one Block. The current key is rebuilt in an instance-owned buffer (prefix decompression), so
 * moving allocates nothing; `key()` and `value()` return views, valid until the next move. `value()` is a view of the
 * immutable block and stays valid longer: as long as the caller holds it.
 *
 * One iterator can be re-pointed at another block with `reset(block)`, which is what the two-level table iterator
 * and point gets do to avoid an allocation per block.
 */
export class BlockIterator implements InternalIterator {
  private block: Block;
  private data: Uint8Array;
  private restartsOffset: number;
  /** Offset of the current entry; == restartsOffset when not valid. */
  private current: number;
  /** Offset just past the current entry. */
  private nextOffset = 0;
  /** A restart block at or before the current entry's (see prev()). */
  private restartIndex = 0;
  private keyBuf: Uint8Array = new Uint8Array(64);
  private keyLen = 0;
  /** keyBuf[0..keyLen) as handed out by key(); replaced when keyBuf is. */
  private keyView: Uint8Array = this.keyBuf.subarray(0, 0);
  private valueAt = 0;
  private valueLen = 0;
  // Decoded entry header, filled by decodeHeader().
  private hShared = 0;
  private hUnshared = 0;
  private hValueLen = 0;
  private hKeyOffset = 0;
  /** Common user-key prefix length found by the last compareFrom(), and the shorter user-key length it compared. */
  private lcp = 0;
  private lcpLimit = 0;
  /** Bytes the current entry's key shares with the previous key. */
  private curShared = 0;
  // Reverse-step cache (as RocksDB's block iterator keeps): the entries of the restart interval the last scanning
  // prev() decoded, so that stepping back within it costs a key copy rather than a rescan of the interval.
  private rcBlock: Block | null = null;
  private rcCount = 0;
  private rcPos = -1;
  /** Per cached entry: offset, key start in rcKeys, key length, value offset, value length. */
  private rcEntries = new Int32Array(RC_FIELDS * 32);
  private rcKeys = new Uint8Array(1024);
  private rcKeysLen = 0;

  constructor(block?: Block) {
    this.block = block ?? new Block(EMPTY_BLOCK_BYTES, '(none)', 0);
    this.data = this.block.data;
    this.restartsOffset = this.block.restartsOffset;
    this.current = this.restartsOffset;
  }

  /** Points the iterator at another block; it is then not valid until positioned. */
  reset(block: Block): void {
    this.block = block;
    this.data = block.data;
    this.restartsOffset = block.restartsOffset;
    this.current = this.restartsOffset;
    this.keyLen = 0;
  }

  valid(): boolean {
    return this.current < this.restartsOffset;
  }

  seekToFirst(): void {
    this.seekToRestart(0);
    this.parseNext();
  }

  seekToLast(): void {
    this.seekToRestart(this.block.numRestarts - 1);
    while (this.parseNext() && this.nextOffset < this.restartsOffset) {}
  }

  seek(target: Uint8Array): void {
    this.seekAt(target, 0, target.length);
  }

  /**
   * Moves to the first entry whose internal key is >= the internal key `target[off..off+len)`. Allocation-free:
   * binary search over the restart points, comparing their keys in place, then a linear scan.
   */
  seekAt(target: Uint8Array, off: number, len: number): void {
    const data = this.data;
    let left = 0;
    let right = this.block.numRestarts - 1;
    // Prefix skipping: every key between two probed keys shares with the target at least the smaller of their common
    // prefixes with it, so comparisons start past it. Keys of one table often share long prefixes.
    let lcpLeft = 0;
    let lcpRight = 0;
    while (left < right) {
      const mid = (left + right + 1) >>> 1;
      const at = this.block.restartPoint(mid);
      this.decodeHeader(at);
      if (this.hShared !== 0) this.corrupt(at, 'restart entry shares a prefix');
      const skip = Math.min(lcpLeft, lcpRight);
      if (this.compareFrom(data, this.hKeyOffset, this.hUnshared, target, off, len, skip) < 0) {
        left = mid;
        lcpLeft = this.lcp;
      } else {
        right = mid - 1;
        lcpRight = this.lcp;
      }
    }
    // Only bounds that were compared count: restart 0 and the end of the block were not.
    const skip = left === 0 || right === this.block.numRestarts - 1 ? 0 : Math.min(lcpLeft, lcpRight);
    this.seekToRestart(left);
    if (!this.parseNext()) return;
    if (this.compareFrom(this.keyBuf, 0, this.keyLen, target, off, len, skip) >= 0) return;
    // Linear scan. The previous key p is below the target t and shares lcp bytes with it. A new key k shares `shared`
    // bytes with p. When p and t differ inside their user keys (lcp < lcpLimit): shared > lcp means k agrees with p
    // where p < t, so k < t; shared < lcp means k > p where p agrees with t, so k > t. Only shared == lcp needs bytes
    // compared, from there on. (Keys are sorted and `shared` maximal, as the builder writes them.)
    //
    // While that holds, a key passed over (shared > lcp) is not even rebuilt: every key from p on agrees with t on
    // its first lcp bytes, so a key with shared <= lcp is t's first `shared` bytes and its own, and one is rebuilt
    // from those only when it is compared or is the answer. Keys passed over are never needed again.
    let lcp = this.lcp;
    let limit = this.lcpLimit;
    const end = this.restartsOffset;
    let prevLen = this.keyLen;
    let at = this.nextOffset;
    while (lcp < limit) {
      if (at >= end) {
        this.nextOffset = at;
        this.parseNext();
        return;
      }
      let shared: number;
      let unshared: number;
      let src: number;
      let valueLen: number;
      if (at + 3 <= end && (data[at]! | data[at + 1]! | data[at + 2]!) < 0x80) {
        shared = data[at]!;
        unshared = data[at + 1]!;
        valueLen = data[at + 2]!;
        src = at + 3;
        if (src + unshared + valueLen > end) this.corrupt(at, 'entry runs past the end of the block');
      } else {
        this.decodeHeader(at);
        shared = this.hShared;
        unshared = this.hUnshared;
        valueLen = this.hValueLen;
        src = this.hKeyOffset;
      }
      if (shared > prevLen) this.corrupt(at, `entry shares ${shared} bytes of a ${prevLen}-byte key`);
      prevLen = shared + unshared;
      if (shared > lcp) {
        at = src + unshared + valueLen;
        continue;
      }
      this.rebuild(at, shared, unshared, valueLen, src, target, off);
      if (shared < lcp) return;
      if (this.compareFrom(this.keyBuf, 0, this.keyLen, target, off, len, shared) >= 0) return;
      lcp = this.lcp;
      limit = this.lcpLimit;
      at = this.nextOffset;
    }
    // p's user key is all of t's or a prefix of it: compare the keys that follow whole (the current key is p's).
    while (this.parseNext()) {
      const shared = this.curShared;
      if (lcp < limit) {
        if (shared > lcp) continue;
        if (shared < lcp) return;
      }
      if (this.compareFrom(this.keyBuf, 0, this.keyLen, target, off, len, Math.min(shared, lcp)) >= 0) return;
      lcp = this.lcp;
      limit = this.lcpLimit;
    }
  }

  /**
   * Makes the entry at `at` (its header decoded: shared, unshared, valueLen, key bytes at `src`) the current one, its
   * key rebuilt from the first `shared` bytes of `target[off..)` (which the scan knows it shares) and its own bytes.
   */
  private rebuild(
    at: number,
    shared: number,
    unshared: number,
    valueLen: number,
    src: number,
    target: Uint8Array,
    off: number,
  ): void {
    const keyLen = shared + unshared;
    if (this.keyBuf.length < keyLen) {
      this.keyBuf = new Uint8Array(Math.max(keyLen, this.keyBuf.length * 2));
      this.keyView = this.keyBuf.subarray(0, 0);
    }
    const kb = this.keyBuf;
    const data = this.data;
    for (let i = 0; i < shared; i++) kb[i] = target[off + i]!;
    for (let i = 0; i < unshared; i++) kb[shared + i] = data[src + i]!;
    this.current = at;
    this.keyLen = keyLen;
    this.curShared = shared;
    this.valueAt = src + unshared;
    this.valueLen = valueLen;
    this.nextOffset = src + unshared + valueLen;
  }

  /**
   * compareInternalAt for keys known to share their first `skip` user-key bytes; leaves the length of their common
   * user-key prefix in `this.lcp`.
   */
  private compareFrom(
    a: Uint8Array,
    aOff: number,
    aLen: number,
    b: Uint8Array,
    bOff: number,
    bLen: number,
    skip: number,
  ): number {
    const au = aLen >= TRAILER_SIZE ? aLen - TRAILER_SIZE : aLen;
    const bu = bLen >= TRAILER_SIZE ? bLen - TRAILER_SIZE : bLen;
    const n = Math.min(au, bu);
    let i = Math.min(skip, n);
    while (i < n && a[aOff + i] === b[bOff + i]) i++;
    this.lcp = i;
    this.lcpLimit = n;
    if (i < n) return a[aOff + i]! - b[bOff + i]!;
    if (au !== bu) return au - bu;
    if (au === aLen || bu === bLen) return 0;
    for (let j = 0; j < TRAILER_SIZE; j++) {
      const d = b[bOff + bu + j]! - a[aOff + au + j]!;
      if (d !== 0) return d;
    }
    return 0;
  }

  next(): void {
    this.parseNext();
  }

  prev(): void {
    const original = this.current;
    // Fast path: stepping back inside the restart interval the last scan decoded.
    if (this.rcBlock === this.block) {
      const e = this.rcEntries;
      let pos = this.rcPos;
      if (pos + 1 < this.rcCount && e[(pos + 1) * RC_FIELDS] === original) pos++;
      if (pos > 0 && e[pos * RC_FIELDS] === original) {
        this.loadCached(pos - 1);
        return;
      }
    }
    // restartIndex is a hint at or before the current entry's restart block (next() does not maintain it): move it up
    // to the last restart before the current entry, then down if the current entry is itself a restart point.
    const n = this.block.numRestarts;
    while (this.restartIndex + 1 < n && this.block.restartPoint(this.restartIndex + 1) < original) this.restartIndex++;
    while (this.block.restartPoint(this.restartIndex) >= original) {
      if (this.restartIndex === 0) {
        this.current = this.restartsOffset;
        this.restartIndex = this.block.numRestarts;
        return;
      }
      this.restartIndex--;
    }
    // Decode the interval up to the entry before `original`, remembering each entry for the prev() calls to come.
    this.seekToRestart(this.restartIndex);
    this.rcBlock = this.block;
    this.rcCount = 0;
    this.rcKeysLen = 0;
    while (this.parseNext()) {
      this.remember();
      if (this.nextOffset >= original) break;
    }
    this.rcPos = this.rcCount - 1;
  }

  /** Appends the current entry to the reverse-step cache. */
  private remember(): void {
    const i = this.rcCount++;
    if ((i + 1) * RC_FIELDS > this.rcEntries.length) {
      const grown = new Int32Array(this.rcEntries.length * 2);
      grown.set(this.rcEntries);
      this.rcEntries = grown;
    }
    const keyLen = this.keyLen;
    if (this.rcKeysLen + keyLen > this.rcKeys.length) {
      const grown = new Uint8Array(Math.max(this.rcKeysLen + keyLen, this.rcKeys.length * 2));
      grown.set(this.rcKeys.subarray(0, this.rcKeysLen));
      this.rcKeys = grown;
    }
    const keys = this.rcKeys;
    const kb = this.keyBuf;
    const at = this.rcKeysLen;
    for (let j = 0; j < keyLen; j++) keys[at + j] = kb[j]!;
    const e = this.rcEntries;
    const b = i * RC_FIELDS;
    e[b] = this.current;
    e[b + 1] = at;
    e[b + 2] = keyLen;
    e[b + 3] = this.valueAt;
    e[b + 4] = this.valueLen;
    this.rcKeysLen = at + keyLen;
  }

  /** Makes cached entry `pos` the current one. */
  private loadCached(pos: number): void {
    const e = this.rcEntries;
    const b = pos * RC_FIELDS;
    const keyLen = e[b + 2]!;
    if (this.keyBuf.length < keyLen) {
      this.keyBuf = new Uint8Array(Math.max(keyLen, this.keyBuf.length * 2));
      this.keyView = this.keyBuf.subarray(0, 0);
    }
    const kb = this.keyBuf;
    const keys = this.rcKeys;
    const from = e[b + 1]!;
    for (let j = 0; j < keyLen; j++) kb[j] = keys[from + j]!;
    this.keyLen = keyLen;
    this.current = e[b]!;
    this.valueAt = e[b + 3]!;
    this.valueLen = e[b + 4]!;
    this.nextOffset = this.valueAt + this.valueLen;
    this.rcPos = pos;
  }

  /**
   * The current key. The returned view is reused while keys keep one length, so a scan of same-length keys allocates
   * no key views; as the InternalIterator contract says, its bytes change when the cursor moves.
   */
  key(): Uint8Array {
    if (this.keyView.length !== this.keyLen) this.keyView = this.keyBuf.subarray(0, this.keyLen);
    return this.keyView;
  }

  value(): Uint8Array {
    return this.data.subarray(this.valueAt, this.valueAt + this.valueLen);
  }

  /** The current key's bytes live in `keyBuffer()[0..keyLength())`: for in-place comparisons. */
  keyBuffer(): Uint8Array {
    return this.keyBuf;
  }

  keyLength(): number {
    return this.keyLen;
  }

  /** The current value lives in `block().data[valueOffset()..+valueLength())`. */
  valueOffsetInBlock(): number {
    return this.valueAt;
  }

  valueLength(): number {
    return this.valueLen;
  }

  valueBuffer(): Uint8Array {
    return this.data;
  }

  valueOffset(): number {
    return this.valueAt;
  }

  currentBlock(): Block {
    return this.block;
  }

  close(): void {
    this.current = this.restartsOffset;
  }

  private seekToRestart(i: number): void {
    this.keyLen = 0;
    this.restartIndex = i;
    const at = this.block.restartPoint(i);
    if (at > this.restartsOffset) this.corrupt(this.restartsOffset + i * 4, `restart point ${at} out of range`);
    this.nextOffset = at;
  }

  /** Decodes the entry at nextOffset into the current position. Returns false (and invalidates) at the end. */
  private parseNext(): boolean {
    const at = this.nextOffset;
    if (at >= this.restartsOffset) {
      this.current = this.restartsOffset;
      this.restartIndex = this.block.numRestarts;
      return false;
    }
    this.current = at;
    const data = this.data;
    let shared: number;
    let unshared: number;
    let valueLen: number;
    let src: number;
    // Fast path inline: the three lengths below 128 take one byte each (small keys and values).
    if (at + 3 <= this.restartsOffset && (data[at]! | data[at + 1]! | data[at + 2]!) < 0x80) {
      shared = data[at]!;
      unshared = data[at + 1]!;
      valueLen = data[at + 2]!;
      src = at + 3;
      if (src + unshared + valueLen > this.restartsOffset) this.corrupt(at, 'entry runs past the end of the block');
    } else {
      this.decodeHeader(at);
      shared = this.hShared;
      unshared = this.hUnshared;
      valueLen = this.hValueLen;
      src = this.hKeyOffset;
    }
    if (shared > this.keyLen) this.corrupt(at, `entry shares ${shared} bytes of a ${this.keyLen}-byte key`);
    const keyLen = shared + unshared;
    if (this.keyBuf.length < keyLen) {
      const grown = new Uint8Array(Math.max(keyLen, this.keyBuf.length * 2));
      grown.set(this.keyBuf.subarray(0, shared));
      this.keyBuf = grown;
      this.keyView = grown.subarray(0, 0);
    }
    const kb = this.keyBuf;
    if (unshared < 48) {
      for (let i = 0; i < unshared; i++) kb[shared + i] = data[src + i]!;
    } else {
      kb.set(data.subarray(src, src + unshared), shared);
    }
    this.keyLen = keyLen;
    this.curShared = shared;
    this.valueAt = src + unshared;
    this.valueLen = valueLen;
    this.nextOffset = src + unshared + valueLen;
    return true;
  }

  /** Reads the three varints of the entry at `at`; checks that its key and value lie inside the entries area. */
  private decodeHeader(at: number): void {
    const data = this.data;
    const limit = this.restartsOffset;
    let p = at;
    // Fast path: all three lengths below 128 take one byte each (the common case for small keys and values).
    if (p + 3 <= limit && (data[p]! | data[p + 1]! | data[p + 2]!) < 0x80) {
      this.hShared = data[p]!;
      this.hUnshared = data[p + 1]!;
      this.hValueLen = data[p + 2]!;
      p += 3;
    } else {
      let v = 0;
      for (let field = 0; field < 3; field++) {
        v = 0;
        let shift = 0;
        for (;;) {
          if (p >= limit || shift > 28) this.corrupt(at, 'bad varint in entry header');
          const b = data[p++]!;
          v += (b & 0x7f) * 2 ** shift;
          if (b < 0x80) break;
          shift += 7;
        }
        if (field === 0) this.hShared = v;
        else if (field === 1) this.hUnshared = v;
        else this.hValueLen = v;
      }
    }
    this.hKeyOffset = p;
    if (p + this.hUnshared + this.hValueLen > limit) this.corrupt(at, 'entry runs past the end of the block');
  }

  private corrupt(at: number, what: string): never {
    this.current = this.restartsOffset;
    throw new CorruptionError(this.block.file, this.block.fileOffset + at, what);
  }
}
