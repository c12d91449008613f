/**
 * The header of an encoded write batch (FORMAT.md "Write batch"): the sequence of its first write (fixed64 LE)
 * and its count of writes (fixed32 LE), then the writes. Read by the WAL, which merges batches, and by replay.
 */

/** Bytes of the header. */
export const BATCH_HEADER_SIZE = 12;

/** The first sequence number stamped in an encoded batch's header. */
export function batchSequence(rep: Uint8Array, at = 0): number {
  const lo = (rep[at]! | (rep[at + 1]! << 8) | (rep[at + 2]! << 16) | (rep[at + 3]! << 24)) >>> 0;
  const hi = (rep[at + 4]! | (rep[at + 5]! << 8) | (rep[at + 6]! << 16) | (rep[at + 7]! << 24)) >>> 0;
  return hi * 0x1_0000_0000 + lo;
}

/** The entry count in an encoded batch's header. */
export function batchCount(rep: Uint8Array, at = 0): number {
  return (rep[at + 8]! | (rep[at + 9]! << 8) | (rep[at + 10]! << 16) | (rep[at + 11]! << 24)) >>> 0;
}
