/**
 * Internal keys: what the memtable and every SSTable order by.
 *
 *   internal key = user key bytes ++ trailer (8 bytes)
 *   trailer      = big-endian uint64 of (sequence << 8 | kind)     sequence < 2^45, so seq * 256 + kind stays a safe integer
 *
 * Ordering: user key ascending (bytewise), then sequence DESCENDING, then kind descending, so that the newest
 * version of a key comes first and a lookup for (key, snapshotSeq) seeks to the first entry with seq <= snapshotSeq.
 * The trailer is stored big-endian so it can be read with two 32-bit loads.
 */
export const TRAILER_SIZE = 8;

/** What an entry means. Values are on disk: never renumber. */
export enum ValueKind {
  Deletion = 0,
  Value = 1,
}

/** The kind used when seeking: the highest, so (key, seq, SEEK_KIND) sorts before every entry of (key, seq). */
export const SEEK_KIND = ValueKind.Value;

/** Largest sequence number an internal key can carry: seq * 256 + kind must stay below 2^53. */
export const MAX_SEQUENCE = 2 ** 45 - 1;

/** Compare two byte strings lexicographically (memcmp order). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** Writes the trailer for (seq, kind) at `out[at..at+8)`. */
export function writeTrailer(out: Uint8Array, at: number, seq: number, kind: ValueKind): void {
  // seq * 256 + kind < 2^53: split into high and low 32-bit words.
  const v = seq * 256 + kind;
  const hi = Math.floor(v / 0x1_0000_0000);
  const lo = v >>> 0;
  out[at] = hi >>> 24;
  out[at + 1] = hi >>> 16;
  out[at + 2] = hi >>> 8;
  out[at + 3] = hi;
  out[at + 4] = lo >>> 24;
  out[at + 5] = lo >>> 16;
  out[at + 6] = lo >>> 8;
  out[at + 7] = lo;
}

/** Builds an internal key from a user key, a sequence number and a kind. */
export function makeInternalKey(userKey: Uint8Array, seq: number, kind: ValueKind): Uint8Array {
  const out = new Uint8Array(userKey.length + TRAILER_SIZE);
  out.set(userKey, 0);
  writeTrailer(out, userKey.length, seq, kind);
  return out;
}

/** The (seq << 8 | kind) trailer of an internal key, as a number. */
export function trailerOf(ikey: Uint8Array): number {
  const at = ikey.length - TRAILER_SIZE;
  const hi = ((ikey[at]! << 24) | (ikey[at + 1]! << 16) | (ikey[at + 2]! << 8) | ikey[at + 3]!) >>> 0;
  const lo = ((ikey[at + 4]! << 24) | (ikey[at + 5]! << 16) | (ikey[at + 6]! << 8) | ikey[at + 7]!) >>> 0;
  return hi * 0x1_0000_0000 + lo;
}

export function sequenceOf(ikey: Uint8Array): number {
  return Math.floor(trailerOf(ikey) / 256);
}

export function kindOf(ikey: Uint8Array): ValueKind {
  return ikey[ikey.length - 1]! as ValueKind;
}

/** The user-key part of an internal key, as a view (no copy). */
export function userKeyOf(ikey: Uint8Array): Uint8Array {
  return ikey.subarray(0, ikey.length - TRAILER_SIZE);
}

/** Internal-key order: user key ascending, then trailer (sequence, kind) descending. */
export function compareInternalKeys(a: Uint8Array, b: Uint8Array): number {
  const c = Buffer.compare(a.subarray(0, a.length - TRAILER_SIZE), b.subarray(0, b.length - TRAILER_SIZE));
  if (c !== 0) return c;
  const ta = trailerOf(a);
  const tb = trailerOf(b);
  return ta > tb ? -1 : ta < tb ? 1 : 0;
}

/**
 * Compares the internal keys `a[aOff..aOff+aLen)` and `b[bOff..bOff+bLen)` in place: user key bytewise ascending,
 * then the 8-byte big-endian trailer descending (newest first). Same order as `compareInternalKeys`. A key shorter
 * than a trailer is treated as a bare user key (sorting as if its trailer were all zero bytes) rather than crashing.
 */
export function compareInternalAt(
  a: Uint8Array,
  aOff: number,
  aLen: number,
  b: Uint8Array,
  bOff: number,
  bLen: number,
): number {
  const au = aLen >= TRAILER_SIZE ? aLen - TRAILER_SIZE : aLen;
  const bu = bLen >= TRAILER_SIZE ? bLen - TRAILER_SIZE : bLen;
  const n = Math.min(au, bu);
  for (let i = 0; i < n; i++) {
    const d = a[aOff + i]! - b[bOff + i]!;
    if (d !== 0) return d;
  }
  if (au !== bu) return au - bu;
  if (au === aLen || bu === bLen) return 0;
  for (let i = 0; i < TRAILER_SIZE; i++) {
    const d = b[bOff + bu + i]! - a[aOff + au + i]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** Compares byte strings `a[aOff..aOff+aLen)` and `b[bOff..bOff+bLen)` bytewise, in place. */
export function compareBytesAt(
  a: Uint8Array,
  aOff: number,
  aLen: number,
  b: Uint8Array,
  bOff: number,
  bLen: number,
): number {
  const n = Math.min(aLen, bLen);
  for (let i = 0; i < n; i++) {
    const d = a[aOff + i]! - b[bOff + i]!;
    if (d !== 0) return d;
  }
  return aLen - bLen;
}
