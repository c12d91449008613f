/**
 * Varint32 (LEB128, as in LevelDB's util/coding) helpers over plain Uint8Arrays. Readers return the decoded value and
 * leave the new offset in the `pos` cell so that hot loops allocate nothing.
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
