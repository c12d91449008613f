/**
 * The expiry filter of compactions (RocksDB's TTL compaction, as a CompactionFilter would do it): a user of the engine
 * that stores an expiry inside its values describes where (`EngineOptions.expiryFilter`), and every compaction turns
 * the newest entry of a key whose expiry has passed into a tombstone of the same sequence, which later compactions
 * drop as they drop any tombstone. A tombstone, not nothing: an older version of the key in a deeper level would
 * otherwise come back. The description is data, not a function, because compactions run in worker threads, which a
 * function cannot reach.
 *
 * A value matches when it is at least `expiresAtOffset + 8` bytes long, is not `skipLength` bytes long, holds
 * `marker` at `markerOffset` and has a bit of `flagsMask` set in the byte at `flagsOffset`; its expiry is then the
 * little-endian f64 at `expiresAtOffset` (ms since the Unix epoch), compared with the time the compaction was
 * scheduled at.
 */
import { invalidArgument } from './errors.js';

export interface ExpiryFilter {
  /** Only keys that start with these bytes are looked at (may be empty: every key). */
  readonly keyPrefix: Uint8Array;
  readonly markerOffset: number;
  readonly marker: number;
  readonly flagsOffset: number;
  readonly flagsMask: number;
  readonly expiresAtOffset: number;
  /** Values of exactly this length are never expired (-1: none), e.g. another format's fixed-size records. */
  readonly skipLength: number;
}

/** Throws INVALID_ARGUMENT unless `f` is a well-formed expiry filter. */
export function checkExpiryFilter(f: unknown): void {
  if (f === null) return;
  const x = f as Partial<ExpiryFilter> | undefined;
  const byte = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 255;
  const offset = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < 1 << 20;
  const ok =
    typeof x === 'object' &&
    x.keyPrefix instanceof Uint8Array &&
    offset(x.markerOffset) &&
    byte(x.marker) &&
    offset(x.flagsOffset) &&
    byte(x.flagsMask) &&
    offset(x.expiresAtOffset) &&
    Number.isInteger(x.skipLength) &&
    (x.skipLength as number) >= -1;
  if (!ok) throw invalidArgument(`option expiryFilter is not an expiry filter: ${JSON.stringify(f)}`);
}

/**
 * True if the entry of user key `key[0, keyLength)` and value `value` has, as `filter` reads it, an expiry at or
 * before `now`.
 */
export function expiredEntry(
  filter: ExpiryFilter,
  key: Uint8Array,
  keyLength: number,
  value: Uint8Array,
  now: number,
): boolean {
  const prefix = filter.keyPrefix;
  if (keyLength < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  const at = filter.expiresAtOffset;
  if (value.length < at + 8 || value.length === filter.skipLength) return false;
  if (value[filter.markerOffset] !== filter.marker || (value[filter.flagsOffset]! & filter.flagsMask) === 0)
    return false;
  return new DataView(value.buffer, value.byteOffset + at, 8).getFloat64(0, true) <= now;
}
