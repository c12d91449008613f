import { invalidArgument } from '../base/errors.js';
import { murmur3 } from '../base/murmur3.js';

/**
 * Bloom filter over user keys, one per table ("full filter", as in RocksDB), cache-local: every key's probes fall in
 * one 64-byte block (a CPU cache line), so a lookup costs one cache miss however many probes it makes. This is the
 * layout of RocksDB's FastLocalBloom; at 10 bits per key it gives about 1% false positives, close to a plain bloom
 * filter's 0.8%, for a third of the memory traffic.
 *
 * Layout (see FORMAT.md, "Filter block"):
 *
 *   filter := lines[numLines * 64] | k: uint8
 *
 * A key with 32-bit hash h uses line floor(h * numLines / 2^32). Its k probes come from g = h * 0x9e3779b9
 * (mod 2^32), multiplied again by 0x9e3779b9 after each probe; a probe sets bit (g >>> 23) of the line (bit b lives in
 * byte b >> 3 at position b & 7). A `k` of 0 or above 30 is reserved and reads as "may contain everything", so an old
 * reader never drops keys of a newer filter.
 */

/** Bytes per line: one cache line, 512 bits. */
export const BLOOM_LINE_BYTES = 64;
// Multiplier deriving each probe from the previous one: 2^32 / golden ratio, odd, so successive values stay spread.
const GOLDEN = 0x9e3779b9 | 0;

/** The line of a hash among `numLines`: floor(h * numLines / 2^32), computed exactly in doubles. */
function lineOf(h: number, numLines: number): number {
  const t = (h >>> 16) * numLines + Math.floor(((h & 0xffff) * numLines) / 0x1_0000);
  return Math.floor(t / 0x1_0000);
}

/** Probes per key for a bits-per-key budget: bits * ln 2 minimizes the false-positive rate; clamped to [1, 30]. */
export function bloomProbes(bitsPerKey: number): number {
  return Math.min(30, Math.max(1, Math.round(bitsPerKey * 0.69)));
}

/**
 * 32-bit hash of `buf[off..off+len)`: MurmurHash3 x86_32, seed fixed because it is part of the on-disk format.
 * Allocation-free, so a point get hashes its key in place.
 */
export function bloomHash(buf: Uint8Array, off: number, len: number): number {
  return murmur3(buf, off, len, 0xbc9f1d34) >>> 0;
}

/**
 * Collects key hashes while a table is built and encodes the filter at the end. Holds 4 bytes per key (the hash),
 * never the keys themselves.
 */
export class BloomFilterBuilder {
  private readonly bitsPerKey: number;
  private hashes = new Uint32Array(1024);
  private count = 0;

  /** `bitsPerKey` > 0; 10 gives about 1% false positives. */
  constructor(bitsPerKey: number) {
    if (!(bitsPerKey > 0) || bitsPerKey > 1000)
      throw invalidArgument(`bloom bits per key must be in (0, 1000], got ${bitsPerKey}`);
    this.bitsPerKey = bitsPerKey;
  }

  /** Number of keys added. */
  get keys(): number {
    return this.count;
  }

  /** Adds the key `buf[off..off+len)`. Adding one key twice is harmless (but costs its 4 bytes twice). */
  addKey(buf: Uint8Array, off: number, len: number): void {
    if (this.count === this.hashes.length) {
      const grown = new Uint32Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.count++] = bloomHash(buf, off, len);
  }

  /** Encodes the filter (lines then k) into a new array. */
  finish(): Uint8Array {
    const numLines = Math.max(1, Math.ceil((this.count * this.bitsPerKey) / (BLOOM_LINE_BYTES * 8)));
    const k = bloomProbes(this.bitsPerKey);
    const size = numLines * BLOOM_LINE_BYTES;
    const out = new Uint8Array(size + 1);
    out[size] = k;
    for (let j = 0; j < this.count; j++) {
      const h = this.hashes[j]!;
      const base = lineOf(h, numLines) * BLOOM_LINE_BYTES;
      let g = Math.imul(h, GOLDEN);
      for (let i = 0; i < k; i++) {
        const bit = g >>> 23;
        out[base + (bit >>> 3)]! |= 1 << (bit & 7);
        g = Math.imul(g, GOLDEN);
      }
    }
    return out;
  }

  /** Forgets every key, keeping the buffer. */
  reset(): void {
    this.count = 0;
  }
}

/** Read side of a filter written by BloomFilterBuilder. */
export class BloomFilter {
  private readonly lines: Uint8Array;
  private readonly numLines: number;
  private readonly k: number;

  /** `filter` is the encoded filter (lines then k); the instance keeps a view of it. Never throws. */
  constructor(filter: Uint8Array) {
    const size = filter.length - 1;
    this.lines = filter;
    // A length that is not whole lines plus k cannot be ours: treat it as "no filter" (numLines 0 -> may contain).
    this.numLines = size > 0 && size % BLOOM_LINE_BYTES === 0 ? size / BLOOM_LINE_BYTES : 0;
    this.k = size >= 0 ? filter[size]! : 0;
  }

  /** False only if the key `buf[off..off+len)` was certainly not added. */
  mayContainAt(buf: Uint8Array, off: number, len: number): boolean {
    return this.mayContainHash(bloomHash(buf, off, len));
  }

  /** False only if `key` was certainly not added. */
  mayContain(key: Uint8Array): boolean {
    return this.mayContainHash(bloomHash(key, 0, key.length));
  }

  /** Probes by a precomputed {@link bloomHash}, so one hash can test many tables' filters. */
  mayContainHash(hash: number): boolean {
    const k = this.k;
    // An empty or unknown filter (k 0 or above 30 is reserved) must not drop keys.
    if (this.numLines === 0 || k > 30 || k === 0) return true;
    const lines = this.lines;
    const base = lineOf(hash, this.numLines) * BLOOM_LINE_BYTES;
    let g = Math.imul(hash, GOLDEN);
    for (let i = 0; i < k; i++) {
      const bit = g >>> 23;
      if ((lines[base + (bit >>> 3)]! & (1 << (bit & 7))) === 0) return false;
      g = Math.imul(g, GOLDEN);
    }
    return true;
  }
}
