/**
 * The map's records in memory: each key and value as one arena record (memory/arena.ts) that an index slot points
 * at. Writing a record and pointing the index at it happen here, in the order readers depend on: a new block is
 * filled before any slot points at it, a slot changes and a block is freed under the key's stripe lock, and a new
 * segment or table is published before a slot can name it.
 */
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { hashBytes, writeUtf8 } from '../key-bytes.js';
import {
  type Arena,
  FLAG_LIVE,
  FLAGS_AT,
  LOC_TOMBSTONE,
  locOffset,
  locSegment,
  MAX_RECORD_BYTES,
  NO_EXPIRY,
  RECORD_HEADER_BYTES,
  recordBytes,
} from '../memory/arena.js';
import { ExpiryHeap } from '../memory/expiry-heap.js';
import { sizeClassOf } from '../memory/size-class.js';
import type { KeyProbe, MapIndex } from './map-index.js';
import { MAX_KEY_BYTES, type MapKey } from './map-options.js';
import type { MapSharing } from './map-sharing.js';
import type { Seqlock } from './seqlock.js';

/** `versionOf` of an absent (or expired) key, and a check that the key must be absent. */
export const ABSENT = -1;
/** A write's check that passes whatever the key's version. */
export const ANY_VERSION = -2;
/** What `MapStore.delete` removed: a record reads saw, or one whose expiry had passed. */
export const REMOVED_LIVE = 1;
export const REMOVED_EXPIRED = 0;

/**
 * The check a write's options ask for: ANY_VERSION, ABSENT (`ifAbsent: true`) or the `ifVersion`. Throws
 * INVALID_ARGUMENT for options that are not an object, a version that is not a non-negative integer, or both.
 */
export function checkOf(options: { ifVersion?: unknown; ifAbsent?: unknown }): number {
  if (typeof options !== 'object' || options === null) throw invalidArgument('options must be an object');
  const { ifVersion, ifAbsent } = options;
  if (ifAbsent !== undefined && ifAbsent !== false && ifAbsent !== true) {
    throw invalidArgument('ifAbsent must be a boolean');
  }
  if (ifVersion === undefined) return ifAbsent === true ? ABSENT : ANY_VERSION;
  if (ifAbsent === true) throw invalidArgument('ifVersion and ifAbsent cannot both be given');
  if (typeof ifVersion !== 'number' || !Number.isSafeInteger(ifVersion) || ifVersion < 0) {
    throw invalidArgument(`ifVersion must be a non-negative integer, got ${String(ifVersion)}`);
  }
  return ifVersion;
}

/**
 * The absolute expiry the options ask for at `now` (NO_EXPIRY: none). Throws INVALID_ARGUMENT for a `ttl` or
 * `expiresAt` that is not a positive finite number, or both.
 */
export function expiresAtOf(options: { ttl?: unknown; expiresAt?: unknown }, now: number): number {
  const { ttl, expiresAt } = options;
  if (ttl === undefined && expiresAt === undefined) return NO_EXPIRY;
  if (ttl !== undefined && expiresAt !== undefined) throw invalidArgument('ttl and expiresAt cannot both be given');
  const n = ttl ?? expiresAt;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
    throw invalidArgument(
      `${ttl === undefined ? 'expiresAt' : 'ttl'} must be a positive number of ms, got ${String(n)}`,
    );
  }
  return ttl === undefined ? n : now + n;
}

export class MapStore {
  /** Bytes of headers, keys and values of live records, without class padding (`stats().payloadBytes`). */
  payload = 0;
  /**
   * Blocks freed so far (a record deleted, or moved to a block of another class): a view positioned when it was
   * lower re-finds its key instead of reading a block that may hold another record now.
   */
  reclaims = 0;
  /** Live records that have an expiry (`stats().expiring`). */
  expiring = 0;
  /**
   * The expiry index (memory/expiry-heap.ts): an entry per write of a record with an expiry, checked lazily against
   * the record at its location when it comes due (map-expiry.ts).
   */
  readonly expiries = new ExpiryHeap();
  /** What the store's lookups learn of their key, for the write that follows (the store's own: reused). */
  private readonly probe: KeyProbe;

  /** `now`: the map's clock (ms since the epoch), against which expiries are read. */
  constructor(
    readonly index: MapIndex,
    readonly arena: Arena,
    private readonly seqlock: Seqlock,
    private readonly sharing: MapSharing,
    readonly now: () => number,
  ) {
    this.probe = index.probe();
  }

  /** The version of `key`, or ABSENT if it is absent or expired. Throws INVALID_ARGUMENT (key of the wrong kind). */
  versionOf(key: MapKey): number {
    const loc = this.liveLocation(key);
    return loc < 0 ? ABSENT : this.arena.version(locSegment(loc), locOffset(loc));
  }

  /**
   * The location of `key`'s record, or -1 if it is absent or expired; the key's UTF-8 length is then `keyLength`.
   * Throws INVALID_ARGUMENT (key of the wrong kind).
   */
  liveLocation(key: MapKey): number {
    const slot = this.index.find(key, this.probe);
    if (slot < 0) return -1;
    const loc = this.probe.location(slot);
    return this.expired(locSegment(loc), locOffset(loc)) ? -1 : loc;
  }

  /**
   * The key of the record at `loc` if that block holds a live record whose expiry is at or before `now` (an entry of
   * the expiry heap, checked), as a view of the arena starting one byte before the key (where an engine key's
   * namespace byte would be: see `removeExpired`); else null.
   */
  expiredKeyAt(loc: number, now: number): Uint8Array | null {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    if (seg >= arena.u8.length || (arena.u8[seg]![off + FLAGS_AT]! & FLAG_LIVE) === 0) return null;
    const e = arena.expiresAt(seg, off);
    if (e === NO_EXPIRY || e > now) return null;
    const k = off + RECORD_HEADER_BYTES;
    return arena.u8[seg]!.subarray(k - 1, k + arena.keyLength(seg, off));
  }

  /** True if the block at `loc` holds a live record whose expiry is `expiresAt` (a heap entry still current). */
  holdsExpiry(loc: number, expiresAt: number): boolean {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    return (arena.u8[seg]![off + FLAGS_AT]! & FLAG_LIVE) !== 0 && arena.expiresAt(seg, off) === expiresAt;
  }

  /** Removes the record of `key`, a view `expiredKeyAt` returned (its first byte is not part of the key). */
  removeExpired(key: Uint8Array): void {
    const slot = this.index.findEngineKey(key, this.probe);
    if (slot >= 0) this.remove(slot);
  }

  /**
   * After an image load: the expiry heap and `expiring` from the records themselves (the image holds neither), one
   * pass over the index reading each record's flags.
   */
  rebuildExpiries(): void {
    const arena = this.arena;
    for (const t of this.index.tables()) {
      const slots = t.slots;
      for (let i = 0; i < t.capacity; i++) {
        const loc = slots[i * 2 + 1]!;
        if (loc <= LOC_TOMBSTONE) continue;
        const e = arena.expiresAt(locSegment(loc), locOffset(loc));
        if (e === NO_EXPIRY) continue;
        this.expiring++;
        this.expiries.push(e, loc);
      }
    }
  }

  /** The UTF-8 length of the key the last lookup looked up. */
  get keyLength(): number {
    return this.probe.keyLength;
  }

  /** True if the record at byte `off` of segment `seg` has an expiry that has passed (the clock is read only then). */
  expired(seg: number, off: number): boolean {
    const e = this.arena.expiresAt(seg, off);
    return e !== NO_EXPIRY && e <= this.now();
  }

  /**
   * Inserts or replaces `key` with the value `src` (`vlen` bytes long), of `version` and `expiresAt` (NO_EXPIRY:
   * none); returns the record's location. Throws KEY_TOO_LARGE or VALUE_TOO_LARGE (map unchanged), INVALID_ARGUMENT
   * (key of the wrong kind).
   */
  put(key: MapKey, src: Uint8Array, vlen: number, version: number, expiresAt: number): number {
    return this.write(key, this.index.find(key, this.probe), src, vlen, 0, version, expiresAt);
  }

  /**
   * Adds a record read back from the engine at open: `engineKey` is the namespace byte then the key, `value` the
   * value bytes. Engine keys are unique and hash and compare like their string, so no lookup is needed.
   */
  load(engineKey: Uint8Array, value: Uint8Array, version: number, expiresAt: number): number {
    const probe = this.probe;
    probe.hash = hashBytes(engineKey, 1, engineKey.length - 1);
    probe.keyLength = engineKey.length - 1;
    return this.write(engineKey, -1, value, value.length, 1, version, expiresAt);
  }

  /**
   * Applies a write read back from the engine's WAL (a crash replay): `engineKey` is the namespace byte then the
   * key, `value` its new value bytes or undefined for a delete. Throws KEY_TOO_LARGE or VALUE_TOO_LARGE as `put`.
   */
  replay(engineKey: Uint8Array, value: Uint8Array | undefined, version: number, expiresAt: number): void {
    const slot = this.index.findEngineKey(engineKey, this.probe);
    if (value !== undefined) this.write(engineKey, slot, value, value.length, 1, version, expiresAt);
    else if (slot >= 0) this.remove(slot);
  }

  /**
   * Deletes `key`'s record: REMOVED_LIVE, REMOVED_EXPIRED (a record whose expiry had passed, which reads no longer
   * saw), or ABSENT if there is none. Throws INVALID_ARGUMENT (key of the wrong kind).
   */
  delete(key: MapKey): number {
    const slot = this.index.find(key, this.probe);
    if (slot < 0) return ABSENT;
    const loc = this.probe.location(slot);
    const expired = this.expired(locSegment(loc), locOffset(loc));
    this.remove(slot);
    return expired ? REMOVED_EXPIRED : REMOVED_LIVE;
  }

  /** Deletes the record in `slot`, which the store's probe just found. */
  private remove(slot: number): void {
    const probe = this.probe;
    const loc = probe.location(slot);
    const seg = locSegment(loc);
    const off = locOffset(loc);
    this.payload -= this.recordBytesAt(seg, off, probe.keyLength);
    if (this.arena.expiresAt(seg, off) !== NO_EXPIRY) this.expiring--;
    this.index.remove(slot, probe);
    this.reclaims++;
  }

  /**
   * The write behind `put`, `load` and `replay`: `slot` is the key's slot as the store's probe found it (-1:
   * absent), whose hash and length it uses; `keyOff` where a byte key's bytes start (1 for engine keys, which carry
   * a namespace byte; an absent one is placed by a search for a free slot of its own).
   */
  private write(
    key: MapKey,
    slot: number,
    src: Uint8Array,
    vlen: number,
    keyOff: number,
    version: number,
    expiresAt: number,
  ): number {
    const index = this.index;
    const probe = this.probe;
    const klen = probe.keyLength;
    const h = probe.hash;
    if (klen > MAX_KEY_BYTES) {
      throw new OffHeapError(OffHeapErrorCodes.KEY_TOO_LARGE, `key of ${klen} bytes exceeds ${MAX_KEY_BYTES}`);
    }
    const bytes = recordBytes(klen, vlen, expiresAt !== NO_EXPIRY);
    if (bytes > MAX_RECORD_BYTES) {
      throw new OffHeapError(
        OffHeapErrorCodes.VALUE_TOO_LARGE,
        `record of ${bytes} bytes exceeds the ${MAX_RECORD_BYTES}-byte limit`,
      );
    }
    const arena = this.arena;
    let loc: number;
    if (slot >= 0) {
      const t = probe.table;
      const oldLoc = t.slots[slot * 2 + 1]!;
      const seg = locSegment(oldLoc);
      const off = locOffset(oldLoc);
      this.payload -= this.recordBytesAt(seg, off, klen);
      if (arena.expiresAt(seg, off) !== NO_EXPIRY) this.expiring--;
      if (arena.sizeClass(seg, off) === sizeClassOf((bytes + 7) >>> 3)) {
        // Same block size: overwrite the value in place.
        this.seqlock.lock(h);
        arena.setValueLength(seg, off, vlen);
        arena.setVersion(seg, off, version);
        arena.u8[seg]!.set(src, off + RECORD_HEADER_BYTES + klen);
        arena.setExpiry(seg, off, klen, vlen, expiresAt);
        this.seqlock.unlock(h);
        loc = oldLoc;
      } else {
        loc = this.alloc(bytes);
        this.writeRecord(loc, key, klen, src, vlen, keyOff, version, expiresAt);
        this.seqlock.lock(h);
        t.slots[slot * 2 + 1] = loc;
        arena.free(oldLoc);
        this.seqlock.unlock(h);
        this.reclaims++;
      }
    } else {
      let grew = false;
      if (index.full()) {
        index.grow();
        this.sharing.publish();
        grew = true;
      }
      loc = this.alloc(bytes);
      this.writeRecord(loc, key, klen, src, vlen, keyOff, version, expiresAt);
      index.insert(h, loc, grew || keyOff !== 0);
    }
    this.payload += bytes;
    if (expiresAt !== NO_EXPIRY) {
      this.expiring++;
      this.expiries.push(expiresAt, loc);
    }
    if (index.migrateStep()) this.sharing.publish();
    return loc;
  }

  /** `recordBytes` of the record at byte `off` of segment `seg`, whose key is `klen` bytes. */
  private recordBytesAt(seg: number, off: number, klen: number): number {
    const arena = this.arena;
    return recordBytes(klen, arena.valueLength(seg, off), arena.expiresAt(seg, off) !== NO_EXPIRY);
  }

  /** A block for `bytes`; a segment the arena added for it is published before any slot can name it. */
  private alloc(bytes: number): number {
    const arena = this.arena;
    const segments = arena.buffers.length;
    const loc = arena.alloc(bytes);
    if (arena.buffers.length !== segments) this.sharing.publish();
    return loc;
  }

  /**
   * Fills a freshly allocated block (invisible to readers until a slot points at it) with the key, then the value
   * (`src`, `vlen` bytes). A byte key's bytes start at `keyOff`.
   */
  private writeRecord(
    loc: number,
    key: MapKey,
    klen: number,
    src: Uint8Array,
    vlen: number,
    keyOff: number,
    version: number,
    expiresAt: number,
  ): void {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = arena.u8[seg]!;
    arena.writeHeader(seg, off, klen, vlen, version, expiresAt);
    const kstart = off + RECORD_HEADER_BYTES;
    if (typeof key === 'string') {
      // `find` just hashed this key: a short ASCII key is already in words (the last word's spare bytes are
      // overwritten by the value below, and stay inside the 8-byte-aligned block).
      const hasher = this.probe.hasher;
      if (hasher.wordsValid) {
        const words = hasher.words;
        const i32 = arena.i32[seg]!;
        const w = kstart >>> 2;
        for (let i = 0, n = (klen + 3) >>> 2; i < n; i++) i32[w + i] = words[i]!;
      } else writeUtf8(key, u8, kstart);
    } else if (keyOff === 0) u8.set(key, kstart);
    else for (let i = 0; i < klen; i++) u8[kstart + i] = key[keyOff + i]!;
    u8.set(src, kstart + klen);
  }
}
