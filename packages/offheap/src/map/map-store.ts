/**
 * The map's records in memory: each key and value as one arena record (memory/arena.ts) that an index slot points
 * at. Writing a record and pointing the index at it happen here, in the order readers depend on: a new block is
 * filled before any slot points at it, a slot changes and a block is freed under the key's stripe lock, and a new
 * segment or table is published before a slot can name it.
 */
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { hashBytes, writeUtf8 } from '../key-bytes.js';
import {
  type Arena,
  locOffset,
  locSegment,
  MAX_RECORD_BYTES,
  RECORD_HEADER_BYTES,
  recordBytes,
} from '../memory/arena.js';
import { sizeClassOf } from '../memory/size-class.js';
import type { KeyProbe, MapIndex } from './map-index.js';
import { MAX_KEY_BYTES, type MapKey } from './map-options.js';
import type { MapSharing } from './map-sharing.js';
import type { Seqlock } from './seqlock.js';

export class MapStore {
  /** Bytes of headers, keys and values of live records, without class padding (`stats().payloadBytes`). */
  payload = 0;
  /**
   * Blocks freed so far (a record deleted, or moved to a block of another class): a view positioned when it was
   * lower re-finds its key instead of reading a block that may hold another record now.
   */
  reclaims = 0;
  /** What the store's lookups learn of their key, for the write that follows (the store's own: reused). */
  private readonly probe: KeyProbe;

  constructor(
    readonly index: MapIndex,
    readonly arena: Arena,
    private readonly seqlock: Seqlock,
    private readonly sharing: MapSharing,
  ) {
    this.probe = index.probe();
  }

  /**
   * Inserts or replaces `key` with the value `src` (`vlen` bytes long); returns the record's location. Throws
   * KEY_TOO_LARGE or VALUE_TOO_LARGE (map unchanged), INVALID_ARGUMENT (key of the wrong kind).
   */
  put(key: MapKey, src: Uint8Array, vlen: number): number {
    return this.write(key, this.index.find(key, this.probe), src, vlen, 0);
  }

  /**
   * Adds a record read back from the engine at open: `engineKey` is the namespace byte then the key. Engine keys are
   * unique and hash and compare like their string, so no lookup is needed.
   */
  load(engineKey: Uint8Array, value: Uint8Array): void {
    const probe = this.probe;
    probe.hash = hashBytes(engineKey, 1, engineKey.length - 1);
    probe.keyLength = engineKey.length - 1;
    this.write(engineKey, -1, value, value.length, 1);
  }

  /**
   * Applies a write read back from the engine's WAL (a crash replay): `engineKey` is the namespace byte then the
   * key, `value` its new value or undefined for a delete. Throws KEY_TOO_LARGE or VALUE_TOO_LARGE as `put`.
   */
  replay(engineKey: Uint8Array, value: Uint8Array | undefined): void {
    const slot = this.index.findEngineKey(engineKey, this.probe);
    if (value !== undefined) this.write(engineKey, slot, value, value.length, 1);
    else if (slot >= 0) this.remove(slot);
  }

  /** Deletes `key`'s record; false if there is none. Throws INVALID_ARGUMENT (key of the wrong kind). */
  delete(key: MapKey): boolean {
    const slot = this.index.find(key, this.probe);
    if (slot < 0) return false;
    this.remove(slot);
    return true;
  }

  /** Deletes the record in `slot`, which the store's probe just found. */
  private remove(slot: number): void {
    const probe = this.probe;
    const loc = probe.location(slot);
    this.payload -= recordBytes(probe.keyLength, this.arena.valueLength(locSegment(loc), locOffset(loc)));
    this.index.remove(slot, probe);
    this.reclaims++;
  }

  /**
   * The write behind `put`, `load` and `replay`: `slot` is the key's slot as the store's probe found it (-1:
   * absent), whose hash and length it uses; `keyOff` where a byte key's bytes start (1 for engine keys, which carry
   * a namespace byte; an absent one is placed by a search for a free slot of its own).
   */
  private write(key: MapKey, slot: number, src: Uint8Array, vlen: number, keyOff: number): number {
    const index = this.index;
    const probe = this.probe;
    const klen = probe.keyLength;
    const h = probe.hash;
    if (klen > MAX_KEY_BYTES) {
      throw new OffHeapError(OffHeapErrorCodes.KEY_TOO_LARGE, `key of ${klen} bytes exceeds ${MAX_KEY_BYTES}`);
    }
    const bytes = recordBytes(klen, vlen);
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
      this.payload -= recordBytes(klen, arena.valueLength(seg, off));
      if (arena.sizeClass(seg, off) === sizeClassOf((bytes + 7) >>> 3)) {
        // Same block size: overwrite the value in place.
        this.seqlock.lock(h);
        arena.setValueLength(seg, off, vlen);
        arena.u8[seg]!.set(src, off + RECORD_HEADER_BYTES + klen);
        this.seqlock.unlock(h);
        loc = oldLoc;
      } else {
        loc = this.alloc(bytes);
        this.writeRecord(loc, key, klen, src, vlen, keyOff);
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
      this.writeRecord(loc, key, klen, src, vlen, keyOff);
      index.insert(h, loc, grew || keyOff !== 0);
    }
    this.payload += bytes;
    if (index.migrateStep()) this.sharing.publish();
    return loc;
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
  private writeRecord(loc: number, key: MapKey, klen: number, src: Uint8Array, vlen: number, keyOff: number): void {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = arena.u8[seg]!;
    arena.writeHeader(seg, off, klen, vlen);
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
