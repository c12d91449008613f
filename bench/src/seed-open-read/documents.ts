/**
 * The documents of seed 002: `{"text": <0–2000 random printable ASCII characters>, "created_at": <unix seconds>}`
 * as UTF-8 JSON, keyed by the document's number as 4 big-endian bytes. Deterministic (one xorshift32 sequence), so
 * every system stores the same bytes and the read can be checked.
 */
import { Xorshift32 } from '../harness/xorshift32.js';

const SEED = 0x5eed_0002;
/** Printable ASCII without the two characters JSON must escape, so a document is its text's length plus 35 bytes. */
const ALPHABET = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).filter(
  (c) => c !== '"' && c !== '\\',
);
/** A fixed `created_at` (2026-01-01T00:00:00Z): the seed stores the load's wall-clock second. */
const CREATED_AT = 1_767_225_600;

/** The seed reads document 123456; a smaller data set reads its middle document instead. */
export function probeKeyNumber(records: number): number {
  return records > 123_456 ? 123_456 : records >> 1;
}

/** The 4-byte big-endian key of document `i`. */
export function documentKey(i: number): Uint8Array {
  const key = new Uint8Array(4);
  new DataView(key.buffer).setUint32(0, i);
  return key;
}

/** Yields documents 0..records-1 in order, each as [key, UTF-8 JSON bytes]. */
export function* documents(records: number): Generator<[Uint8Array, Uint8Array]> {
  const random = new Xorshift32(SEED);
  const encoder = new TextEncoder();
  const chars: string[] = [];
  for (let i = 0; i < records; i++) {
    const length = random.below(2001);
    chars.length = length;
    for (let c = 0; c < length; c++) chars[c] = ALPHABET[random.below(ALPHABET.length)]!;
    const json = JSON.stringify({ text: chars.join(''), created_at: CREATED_AT });
    yield [documentKey(i), encoder.encode(json)];
  }
}

/** Document `n`'s bytes, by regenerating the sequence up to it (for the read check; not timed). */
export function documentBytes(records: number, n: number): Uint8Array {
  let i = 0;
  for (const [, value] of documents(records)) if (i++ === n) return value;
  throw new RangeError(`document ${n} is not among ${records}`);
}
