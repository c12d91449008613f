/**
 * What the engine holds under a map key (`01 key`, FORMAT.md §7): the key's version and expiry, then the value bytes
 * as the arena holds them.
 *
 *   +0   u8   marker 0xc1 (msgpack never uses this byte, so no msgpack value starts with it)
 *   +1   u8   flags: bit 0 = expiresAt follows
 *   +2   f64  version
 *   +10  f64  expiresAt, ms since the epoch (flag bit 0 only)
 *   +10 or +18  the value bytes
 *
 * A directory written by format-1 code holds the value bytes alone; the two are told apart value by value (old and
 * new ones are mixed until each key is rewritten): format 2 starts with the marker, is long enough for its flags,
 * and in a struct map is not exactly the layout's size, which every format-1 struct value is.
 */
import type { ExpiryFilter } from '@heapless/engine';
import { NO_EXPIRY } from '../memory/arena.js';
import { NS_DATA } from './namespaces.js';

export const STORED_MARKER = 0xc1;
/** Flags bit: an expiresAt follows the version. */
export const STORED_EXPIRES = 1;
/** Offsets of the fields, for the engine's compaction filter as well. */
export const STORED_FLAGS_AT = 1;
export const STORED_VERSION_AT = 2;
export const STORED_EXPIRES_AT = 10;
const HEADER_BYTES = 10;
const HEADER_WITH_EXPIRY_BYTES = 18;

/**
 * The engine's compaction filter for a map's stored values (engine base/expiry-filter.ts): keys of the data
 * namespace, the marker, the expiry flag, the expiresAt; a struct map's values of exactly the layout's size are
 * format-1 values (no header) and never expire.
 */
export function storedExpiryFilter(structSize: number | null): ExpiryFilter {
  return {
    keyPrefix: Uint8Array.of(NS_DATA),
    markerOffset: 0,
    marker: STORED_MARKER,
    flagsOffset: STORED_FLAGS_AT,
    flagsMask: STORED_EXPIRES,
    expiresAtOffset: STORED_EXPIRES_AT,
    skipLength: structSize ?? -1,
  };
}

/** Header bytes of a stored value of this expiry (NO_EXPIRY: none). */
export function storedHeaderBytes(expiresAt: number): number {
  return expiresAt === NO_EXPIRY ? HEADER_BYTES : HEADER_WITH_EXPIRY_BYTES;
}

/** Writes the header of a stored value at `at` of `buf`; returns where the value bytes go. */
export function writeStoredHeader(buf: Buffer, at: number, version: number, expiresAt: number): number {
  buf[at] = STORED_MARKER;
  if (expiresAt === NO_EXPIRY) {
    buf[at + STORED_FLAGS_AT] = 0;
    buf.writeDoubleLE(version, at + STORED_VERSION_AT);
    return at + HEADER_BYTES;
  }
  buf[at + STORED_FLAGS_AT] = STORED_EXPIRES;
  buf.writeDoubleLE(version, at + STORED_VERSION_AT);
  buf.writeDoubleLE(expiresAt, at + STORED_EXPIRES_AT);
  return at + HEADER_WITH_EXPIRY_BYTES;
}

/**
 * The value bytes of a stored value written by this format (the change feed's: the map writes only format 2), a view.
 */
export function storedValueBytes(stored: Uint8Array): Uint8Array {
  if (stored.length < HEADER_BYTES || stored[0] !== STORED_MARKER) return stored;
  return stored.subarray((stored[STORED_FLAGS_AT]! & STORED_EXPIRES) === 0 ? HEADER_BYTES : HEADER_WITH_EXPIRY_BYTES);
}

/**
 * Reads stored values: `read` fills `start` (where the value bytes begin), `version` and `expiresAt` (NO_EXPIRY for
 * none). One per reader, reused: reading allocates nothing.
 */
export class StoredValue {
  start = 0;
  version = 0;
  expiresAt = NO_EXPIRY;
  /** Scratch for an f64 at any alignment. */
  private readonly f64 = new Float64Array(1);
  private readonly f64Bytes = new Uint8Array(this.f64.buffer);

  /** `structSize`: a struct map's layout size (null: a msgpack map). */
  constructor(private readonly structSize: number | null) {}

  /**
   * Reads the stored value of `len` bytes at `at` in `buf`; a format-1 value gets `oldVersion` (the sequence of the
   * write that stored it when known, else 0) and no expiry. Returns the value's length.
   */
  read(buf: Uint8Array, at: number, len: number, oldVersion: number): number {
    if (
      len >= HEADER_BYTES &&
      buf[at] === STORED_MARKER &&
      (this.structSize === null || len !== this.structSize) &&
      (buf[at + STORED_FLAGS_AT]! & STORED_EXPIRES) === 0
    ) {
      this.start = at + HEADER_BYTES;
      this.version = this.readF64(buf, at + STORED_VERSION_AT);
      this.expiresAt = NO_EXPIRY;
      return len - HEADER_BYTES;
    }
    if (
      len >= HEADER_WITH_EXPIRY_BYTES &&
      buf[at] === STORED_MARKER &&
      (this.structSize === null || len !== this.structSize)
    ) {
      this.start = at + HEADER_WITH_EXPIRY_BYTES;
      this.version = this.readF64(buf, at + STORED_VERSION_AT);
      this.expiresAt = this.readF64(buf, at + STORED_EXPIRES_AT);
      return len - HEADER_WITH_EXPIRY_BYTES;
    }
    this.start = at;
    this.version = oldVersion;
    this.expiresAt = NO_EXPIRY;
    return len;
  }

  /** The little-endian f64 at `at` of `buf`, whatever its alignment. */
  private readF64(buf: Uint8Array, at: number): number {
    const b = this.f64Bytes;
    for (let i = 0; i < 8; i++) b[i] = buf[at + i]!;
    return this.f64[0]!;
  }
}
