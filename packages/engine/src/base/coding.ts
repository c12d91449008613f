/**
 * The engine's integer encodings over plain Uint8Arrays, as LevelDB's util/coding: varint32 and varint64 (LEB128, low
 * group first) and fixed-width little-endian uint32 and uint64. Readers return the decoded value and leave the new
 * offset in the `pos` cell, so that hot loops allocate nothing.
 */

/** Number of bytes `v` (0 <= v < 2^32) takes as a varint32. */
export function varint32Length(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x20_0000 ? 3 : v < 0x1000_0000 ? 4 : 5;
}

/** Writes `v` as a varint32 at `out[at]`; returns the offset after it. */
export function putVarint32(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return at;
}

/** A one-cell cursor: `pos[0]` is the read offset, advanced by every read. */
export type Cursor = Int32Array | number[];

/**
 * Reads a varint32 at `buf[pos[0]]`, advancing `pos[0]`. Returns -1 if the varint runs past `limit` or is longer than
 * 5 bytes; callers turn that into a CorruptionError with the file and offset they know.
 */
export function getVarint32(buf: Uint8Array, pos: Cursor, limit: number): number {
  let at = pos[0]!;
  let result = 0;
  for (let shift = 0; shift <= 28 && at < limit; shift += 7) {
    const b = buf[at++]!;
    result += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) {
      pos[0] = at;
      return result;
    }
  }
  return -1;
}

/**
 * Writes `v` (0 <= v < 2^53, a JS safe integer) as a LEB128 varint at `out[at]`: at most 8 bytes. Returns the offset
 * after it. Table handles, properties and manifest fields use it; LevelDB's varint64 holds the same bytes.
 */
export function putVarint64(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}

/** Largest number of bytes {@link putVarint64} writes: ceil(53 / 7). */
export const MAX_VARINT64_LENGTH = 8;

/**
 * Reads a varint64 at `buf[pos[0]]`, advancing `pos[0]`. Returns -1, leaving `pos[0]` as it was, if the varint runs
 * past `limit`, is longer than {@link MAX_VARINT64_LENGTH} bytes, or exceeds 2^53 - 1; callers turn that into a
 * CorruptionError with the file and offset they know.
 */
export function getVarint64(buf: Uint8Array, pos: Cursor, limit: number): number {
  let at = pos[0]!;
  let result = 0;
  let mul = 1;
  for (let i = 0; i < MAX_VARINT64_LENGTH && at < limit; i++) {
    const b = buf[at++]!;
    result += (b & 0x7f) * mul;
    if (b < 0x80) {
      if (result > Number.MAX_SAFE_INTEGER) return -1;
      pos[0] = at;
      return result;
    }
    mul *= 0x80;
  }
  return -1;
}

/** Reads a little-endian uint32 at `buf[at..at+4)`. */
export function readU32LE(buf: Uint8Array, at: number): number {
  return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
}

/** Writes `v` (a uint32) little-endian at `buf[at..at+4)`. */
export function writeU32LE(buf: Uint8Array, at: number, v: number): void {
  buf[at] = v;
  buf[at + 1] = v >>> 8;
  buf[at + 2] = v >>> 16;
  buf[at + 3] = v >>> 24;
}

/** Reads a little-endian uint64 at `buf[at..at+8)` as a number; exact below 2^53, which is all the engine writes. */
export function readU64LE(buf: Uint8Array, at: number): number {
  return readU32LE(buf, at) + readU32LE(buf, at + 4) * 0x1_0000_0000;
}

/** Writes `v` (0 <= v < 2^53) little-endian as a uint64 at `buf[at..at+8)`. */
export function writeU64LE(buf: Uint8Array, at: number, v: number): void {
  writeU32LE(buf, at, v >>> 0);
  writeU32LE(buf, at + 4, Math.floor(v / 0x1_0000_0000));
}

/** Above this many bytes, {@link copyBytes} copies through a view (`set`), which is then cheaper than the loop. */
export const COPY_LOOP_MAX = 128;

/**
 * Copies `src[from..from+n)` to `dst[at..)`. Up to {@link COPY_LOOP_MAX} bytes (keys, small values) by an unrolled
 * byte loop, which makes no view: as fast as `set` there and no garbage; beyond, by `set` over a view, where the copy
 * outweighs the view.
 */
export function copyBytes(src: Uint8Array, from: number, n: number, dst: Uint8Array, at: number): void {
  if (n > COPY_LOOP_MAX) {
    dst.set(from === 0 && n === src.length ? src : src.subarray(from, from + n), at);
    return;
  }
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    dst[at + i] = src[from + i]!;
    dst[at + i + 1] = src[from + i + 1]!;
    dst[at + i + 2] = src[from + i + 2]!;
    dst[at + i + 3] = src[from + i + 3]!;
    dst[at + i + 4] = src[from + i + 4]!;
    dst[at + i + 5] = src[from + i + 5]!;
    dst[at + i + 6] = src[from + i + 6]!;
    dst[at + i + 7] = src[from + i + 7]!;
  }
  for (; i < n; i++) dst[at + i] = src[from + i]!;
}
