/**
 * MurmurHash3 x86_32 (Austin Appleby's public domain algorithm), in the parts its users need: the engine's bloom
 * filter hashes bytes with a seed fixed by the table format (FORMAT.md, "Filter block"), and @heapless/offheap's key
 * hash feeds the rounds words read straight from an ASCII string, so the round and the finish stand alone. Imported
 * from `@heapless/engine/murmur3`. Every result is an int32 (a small integer for V8); `>>> 0` gives the uint32.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** One body round: mixes the 4-byte little-endian word `k` into `h`. */
export function murmurRound(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/**
 * The end of a hash of `len` bytes: mixes the tail `k` (the last `len & 3` bytes, little-endian; 0 when none, where
 * mixing it would change nothing) and the length into `h`, then the final avalanche (fmix32).
 */
export function murmurFinish(h: number, k: number, len: number): number {
  if (k !== 0) {
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash of `buf[off, off + len)` with `seed`. Allocation-free. */
export function murmur3(buf: Uint8Array, off: number, len: number, seed: number): number {
  let h = seed;
  let i = off;
  const end = off + len;
  for (; i + 4 <= end; i += 4)
    h = murmurRound(h, buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
  let k = 0;
  for (let shift = 0; i < end; i++, shift += 8) k |= buf[i]! << shift;
  return murmurFinish(h, k, len);
}
