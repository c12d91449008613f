import { bytesEqual, type KeyHasher, utf8EqualsAligned, wordsEqual } from '../key-bytes.js';
import {
  type Arena,
  keyLengthIn,
  LOC_EMPTY,
  LOC_TOMBSTONE,
  locOffset,
  locSegment,
  RECORD_HEADER_BYTES,
} from './arena.js';

/**
 * The index: an open-addressing hash table with linear probing in one SharedArrayBuffer. Capacity is a power of
 * two. Each slot is two u32 words (8 bytes, so a 64-byte cache line holds 8 slots of a probe sequence):
 *
 *   word 0  hash of the key as an int32 (all 32 bits, compared before touching the arena)
 *   word 1  location of the record in the arena (see arena.ts); 0 = empty, 1 = deleted (tombstone)
 *
 * Deletes leave tombstones so that a reader probing at the same time never loses a key that sat behind the deleted
 * one; tombstones are dropped when the map rebuilds into a new table (see map/map-index.ts, "Growth").
 */
export const SLOT_WORDS = 2;
export const SLOT_BYTES = SLOT_WORDS * 4;

export class HashTable {
  readonly sab: SharedArrayBuffer;
  /** The slots as u32 words (locations are read and written through this view). */
  readonly slots: Uint32Array;
  /**
   * The same words as i32: hashes are compared through this view. Hashes are int32 so that they stay small
   * integers in V8 (a uint32 above 2^31 is a heap number: an allocation when returned, a float compare after).
   */
  readonly hashes: Int32Array;
  readonly capacity: number;
  readonly mask: number;
  /** Slots holding a record. */
  live = 0;
  /** Slots holding a tombstone. */
  tombstones = 0;
  /** After a failed find: the slot an insert of that key should use (first tombstone on the path, or the empty). */
  insertAt = -1;

  /** A new empty table of `capacity` slots (a power of two), or a view of an existing one (`sab`, for readers). */
  constructor(capacity: number, sab?: SharedArrayBuffer) {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.sab = sab ?? new SharedArrayBuffer(capacity * SLOT_BYTES);
    this.slots = new Uint32Array(this.sab);
    this.hashes = new Int32Array(this.sab);
  }

  /**
   * Slot index holding the string key `key` just hashed by `hasher` (hash `h`, UTF-8 length `hasher.byteLength`),
   * or -1 and sets `insertAt`. A hit costs one slot read and one record read: the header word holding the key
   * length and the key words right after it (four bytes per compare for short ASCII keys, see KeyHasher.words).
   */
  findString(h: number, key: string, hasher: KeyHasher, arena: Arena): number {
    const slots = this.slots;
    const hashes = this.hashes;
    const mask = this.mask;
    const len = hasher.byteLength;
    const words = hasher.wordsValid ? hasher.words : null;
    let i = h & mask;
    let free = -1;
    for (;;) {
      const loc = slots[i * 2 + 1]!;
      if (loc === LOC_EMPTY) {
        this.insertAt = free === -1 ? i : free;
        return -1;
      }
      if (loc === LOC_TOMBSTONE) {
        if (free === -1) free = i;
      } else if (hashes[i * 2] === h) {
        const seg = locSegment(loc);
        const off = locOffset(loc);
        // A reader racing a write can meet a location in a segment it has not mapped yet: not its key (the
        // seqlock check after the probe sends it round again if it was).
        const i32 = arena.i32[seg];
        if (i32 !== undefined && keyLengthIn(i32, off) === len) {
          const keyStart = off + RECORD_HEADER_BYTES;
          if (
            words !== null
              ? wordsEqual(words, i32, keyStart >>> 2, len)
              : utf8EqualsAligned(key, arena.u8[seg]!, arena.u32[seg]!, keyStart, len)
          ) {
            return i;
          }
        }
      }
      i = (i + 1) & mask;
    }
  }

  /** Slot index holding the key `key[off, off+len)` (hash `h`), or -1 and sets `insertAt`. */
  findBytes(h: number, key: Uint8Array, keyOff: number, len: number, arena: Arena): number {
    const slots = this.slots;
    const hashes = this.hashes;
    const mask = this.mask;
    let i = h & mask;
    let free = -1;
    for (;;) {
      const loc = slots[i * 2 + 1]!;
      if (loc === LOC_EMPTY) {
        this.insertAt = free === -1 ? i : free;
        return -1;
      }
      if (loc === LOC_TOMBSTONE) {
        if (free === -1) free = i;
      } else if (hashes[i * 2] === h) {
        const seg = locSegment(loc);
        const off = locOffset(loc);
        const i32 = arena.i32[seg];
        if (
          i32 !== undefined &&
          keyLengthIn(i32, off) === len &&
          bytesEqual(key, keyOff, arena.u8[seg]!, off + RECORD_HEADER_BYTES, len)
        ) {
          return i;
        }
      }
      i = (i + 1) & mask;
    }
  }

  /** An empty or tombstone slot for a key of hash `h` known to be absent (used when moving records between tables). */
  freeSlotFor(h: number): number {
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    while (slots[i * 2 + 1]! > LOC_TOMBSTONE) i = (i + 1) & mask;
    return i;
  }

  /** One line per used slot, for tests and debugging; `describe` adds what the location holds (the map: its key). */
  dump(describe: (loc: number) => string = () => ''): string {
    const lines = [`table capacity=${this.capacity} live=${this.live} tombstones=${this.tombstones}`];
    for (let i = 0; i < this.capacity; i++) {
      const loc = this.slots[i * 2 + 1]!;
      if (loc === LOC_EMPTY) continue;
      lines.push(
        loc === LOC_TOMBSTONE
          ? `  ${i}: deleted`
          : `  ${i}: hash=${this.slots[i * 2]!.toString(16).padStart(8, '0')} seg=${locSegment(loc)} off=${locOffset(loc)}${describe(loc)}`,
      );
    }
    return lines.join('\n');
  }
}
