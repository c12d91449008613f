import { invalidArgument } from './errors.js';

/**
 * Bloom filter over user keys, one per table ("full filter", as in RocksDB), probed by double hashing
 * (Kirsch-Mitzenmacher: probe i is h + i*delta, delta = h rotated by 17 bits, as LevelDB's bloom.cc does).
 *
 * Layout (see FORMAT.md, "Filter block"):
 *
 *   filter := bits[ceil(numBits / 8)] | k: uint8
 *
 * Bit b lives in byte b >> 3 at position b & 7. numBits is the byte count times 8. A `k` above 30 is reserved for
 * other encodings and reads as "may contain everything", so an old reader never drops keys of a newer filter.
 */

/** Probes per key for a bits-per-key budget: bits * ln 2 minimizes the false-positive rate; clamped to [1, 30]. */
export function bloomProbes(bitsPerKey: number): number {
  return Math.min(30, Math.max(1, Math.round(bitsPerKey * 0.69)));
}

/**
 * 32-bit hash of `buf[off..off+len)`: MurmurHash3 x86_32 (public domain algorithm), seed fixed because it is part of
 * the on-disk format. Allocation-free, so a point get hashes its key in place.
 */
export function bloomHash(buf: Uint8Array, off: number, len: number): number {
  let h = 0xbc9f1d34;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const end4 = off + (len & ~3);
  let i = off;
  for (; i < end4; i += 4) {
    let k = buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = len & 3;
  if (tail !== 0) {
    // Murmur3's tail: the last 1-3 bytes, little-endian.
    let k = buf[i]!;
    if (tail >= 2) k |= buf[i + 1]! << 8;
    if (tail === 3) k |= buf[i + 2]! << 16;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
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

  /** Encodes the filter (bits then k) into a new array. */
  finish(): Uint8Array {
    // A floor of 64 bits keeps the false-positive rate sane for tiny tables.
    const numBits0 = Math.max(64, Math.ceil(this.count * this.bitsPerKey));
    const numBytes = (numBits0 + 7) >>> 3;
    const numBits = numBytes * 8;
    const k = bloomProbes(this.bitsPerKey);
    const out = new Uint8Array(numBytes + 1);
    out[numBytes] = k;
    for (let j = 0; j < this.count; j++) {
      let h = this.hashes[j]!;
      const delta = ((h >>> 17) | (h << 15)) >>> 0;
      for (let i = 0; i < k; i++) {
        const bit = h % numBits;
        out[bit >>> 3]! |= 1 << (bit & 7);
        h = (h + delta) >>> 0;
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
  private readonly bits: Uint8Array;
  private readonly numBits: number;
  private readonly k: number;

  /** `filter` is the encoded filter (bits then k); the instance keeps a view of it. Never throws. */
  constructor(filter: Uint8Array) {
    const n = filter.length - 1;
    this.bits = filter;
    this.numBits = n > 0 ? n * 8 : 0;
    this.k = n > 0 ? filter[n]! : 0;
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
    // An empty or unknown filter (k > 30 is reserved) must not drop keys.
    if (this.numBits === 0 || k > 30 || k === 0) return true;
    const bits = this.bits;
    const numBits = this.numBits;
    let h = hash;
    const delta = ((h >>> 17) | (h << 15)) >>> 0;
    for (let i = 0; i < k; i++) {
      const bit = h % numBits;
      if ((bits[bit >>> 3]! & (1 << (bit & 7))) === 0) return false;
      h = (h + delta) >>> 0;
    }
    return true;
  }
}
