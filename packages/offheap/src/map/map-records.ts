/**
 * A map's records read on the calling thread: one key's (`get`, `has`, `getBytes`), and all of them in index order
 * (old table first while the index grows) by the keys, values and entries iterators and the cursor of `scanSync`.
 * Each read first brings in what a crash open still owes for what it reads (map-writer.ts), and a pass started
 * before the map's close ends with it (CLOSED), as every read does.
 */
import type { FieldSpec } from '@heapless/struct';
import { closedError } from '../errors.js';
import type { MapKey } from '../key-bytes.js';
import { type Arena, LOC_TOMBSTONE, locOffset, locSegment, NO_EXPIRY, RECORD_HEADER_BYTES } from '../memory/arena.js';
import { copyOf } from '../shared/copy-of.js';
import { RecordCursor, type ScanCursor } from '../shared/record-cursor.js';
import type { MapCodec } from './map-codec.js';
import type { KeyProbe, MapIndex } from './map-index.js';
import type { MapEntry } from './map-options.js';
import type { MapWriter } from './map-writer.js';

export class MapRecords<K extends MapKey, V, F extends FieldSpec> {
  /** What the lookups learn of their key (reused: a read allocates nothing for it). */
  private readonly probe: KeyProbe;
  private closed = false;

  /** `now`: the map's clock, against which expiries are read. */
  constructor(
    private readonly index: MapIndex,
    private readonly arena: Arena,
    private readonly codec: MapCodec<F>,
    private readonly keysAreStrings: boolean,
    private readonly writer: MapWriter,
    private readonly now: () => number,
  ) {
    this.probe = index.probe();
  }

  /** `key`'s value, version and expiry, or undefined. Throws DECODE_FAILED, INVALID_ARGUMENT. */
  getEntry(key: K): MapEntry<V> | undefined {
    const loc = this.lookup(key);
    if (loc < 0) return undefined;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const a = this.arena;
    const value = this.codec.decode(
      a,
      seg,
      off + RECORD_HEADER_BYTES + this.probe.keyLength,
      a.valueLength(seg, off),
    ) as V;
    return { value, version: a.version(seg, off), expiresAt: a.expiresAt(seg, off) };
  }

  /** The decoded value of `key` (a new object each call), or undefined. Throws DECODE_FAILED, INVALID_ARGUMENT. */
  get(key: K): V | undefined {
    const loc = this.lookup(key);
    if (loc < 0) return undefined;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const a = this.arena;
    return this.codec.decode(a, seg, off + RECORD_HEADER_BYTES + this.probe.keyLength, a.valueLength(seg, off)) as V;
  }

  /** `key`'s expiry (NO_EXPIRY: none), or undefined if it is absent or expired. Throws INVALID_ARGUMENT. */
  expiryOf(key: K): number | undefined {
    const loc = this.lookup(key);
    return loc < 0 ? undefined : this.arena.expiresAt(locSegment(loc), locOffset(loc));
  }

  /** True if `key` is present. Throws INVALID_ARGUMENT. */
  has(key: K): boolean {
    return this.lookup(key) >= 0;
  }

  /** A copy of the stored bytes of `key`'s value, or undefined. Throws INVALID_ARGUMENT. */
  getBytes(key: K): Uint8Array | undefined {
    const loc = this.lookup(key);
    if (loc < 0) return undefined;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const start = off + RECORD_HEADER_BYTES + this.probe.keyLength;
    return copyOf(this.arena.u8[seg]!, start, start + this.arena.valueLength(seg, off));
  }

  /** Keys, in index order. */
  *keys(): IterableIterator<K> {
    for (const [seg, off] of this.records()) yield this.readKey(seg, off);
  }

  /** Decoded values, in index order. */
  *values(): IterableIterator<V> {
    for (const [seg, off] of this.records()) yield this.readValue(seg, off);
  }

  /** [key, value] pairs, in index order. */
  *entries(): IterableIterator<[K, V]> {
    for (const [seg, off] of this.records()) yield [this.readKey(seg, off), this.readValue(seg, off)];
  }

  /** `fn(cursor, arg)` once per table of the index, the results in that order (see `OffHeapMap.scanSync`). */
  scan<R>(fn: (cursor: ScanCursor<K, V, F>, arg: unknown) => R, arg: unknown): R[] {
    this.writer.settle();
    const out: R[] = [];
    for (const t of this.index.tables()) {
      const cursor = new RecordCursor<K, V, F>(
        t,
        0,
        t.capacity,
        this.arena,
        null,
        this.keysAreStrings,
        this.codec.msgpack,
        this.codec.structType,
        () => true,
        this.now(),
      );
      out.push(fn(cursor, arg));
    }
    return out;
  }

  /** Passes running end with CLOSED at their next record. */
  close(): void {
    this.closed = true;
  }

  /** Live records in index order (old table first while growing), as [segment, offset] pairs. */
  private *records(): IterableIterator<[number, number]> {
    if (this.closed) throw closedError('map');
    this.writer.settle();
    for (const t of this.index.tables()) {
      for (let i = 0; i < t.capacity; i++) {
        const loc = t.slots[i * 2 + 1]!;
        if (loc <= LOC_TOMBSTONE) continue;
        // An iteration started before close() ends with it, as every read does.
        if (this.closed) throw closedError('map');
        const seg = locSegment(loc);
        const off = locOffset(loc);
        if (!this.expired(seg, off)) yield [seg, off];
      }
    }
  }

  /**
   * The location of `key`'s record (its key's length then in `probe`), or -1 (absent, or expired); owed writes of
   * `key` first.
   */
  private lookup(key: K): number {
    this.writer.owe(key);
    const slot = this.index.find(key, this.probe);
    if (slot < 0) return -1;
    const loc = this.probe.location(slot);
    return this.expired(locSegment(loc), locOffset(loc)) ? -1 : loc;
  }

  /** True if the record at byte `off` of segment `seg` has expired (the clock is read only for one with an expiry). */
  private expired(seg: number, off: number): boolean {
    const e = this.arena.expiresAt(seg, off);
    return e !== NO_EXPIRY && e <= this.now();
  }

  private readKey(seg: number, off: number): K {
    const u8 = this.arena.u8[seg]!;
    const klen = this.arena.keyLength(seg, off);
    const start = off + RECORD_HEADER_BYTES;
    return (this.keysAreStrings ? u8.toString('utf8', start, start + klen) : copyOf(u8, start, start + klen)) as K;
  }

  private readValue(seg: number, off: number): V {
    const a = this.arena;
    return this.codec.decode(a, seg, off + RECORD_HEADER_BYTES + a.keyLength(seg, off), a.valueLength(seg, off)) as V;
  }
}
