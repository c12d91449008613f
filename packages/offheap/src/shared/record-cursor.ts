import type { FieldSpec, StructValue } from '@heapless/struct';
import type { MsgpackCodec } from '../codec/msgpack-codec.js';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { type Arena, LOC_TOMBSTONE, locOffset, locSegment, NO_EXPIRY, RECORD_HEADER_BYTES } from '../memory/arena.js';
import type { HashTable } from '../memory/hash-table.js';
import type { StructLayout } from '../struct.js';
import type { StructView, StructViewBase, ViewHost } from '../struct-view.js';
import { copyOf } from './copy-of.js';
import { stripeOf } from './shared-control.js';

/**
 * What a scan function sees: one record at a time, copied out of the shared arena (under the seqlock when another
 * thread owns the map) into a private buffer, so decoding never races a writer.
 *
 *   for (let n = 0; cursor.next(); ) if (cursor.value.age > 30) n++;
 */
export interface ScanCursor<K, V, F extends FieldSpec = FieldSpec> {
  /** Moves to the next record; false when the range is done. */
  next(): boolean;
  /** The current key: a new string, or for `keys: 'bytes'` a new Uint8Array (a copy, kept valid after `next()`). */
  readonly key: K;
  /** The current value, decoded (a new object). */
  readonly value: V;
  /** The current value's bytes: a view of the cursor's buffer, valid until `next()`. */
  readonly bytes: Uint8Array;
  /**
   * Struct maps: a read-only view of the current record. It is one view per cursor, which `next()` moves onto each
   * record, so it may be fetched once before the loop; reading it before the first `next()` or after the last
   * throws VIEW_NOT_POSITIONED.
   */
  readonly view: StructView<F>;
}

/**
 * The ViewHost of views over private copies of records (a scan cursor's, an attached reader's): never writable
 * (`readOnly` is the message of READ_ONLY), never stale (reclaims 0). An unpositioned view (-1) reaches
 * `revalidate`, which throws VIEW_NOT_POSITIONED with `notPositioned`.
 */
export function readOnlyViewHost(notPositioned: string, readOnly: string): ViewHost {
  return {
    reclaims: 0,
    revalidate(): void {
      throw new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, notPositioned);
    },
    beginWrite(): void {
      throw new OffHeapError(OffHeapErrorCodes.READ_ONLY, readOnly);
    },
    endWrite(): void {},
  };
}

/**
 * The host of cursor views: the cursor positions its view on every record `next()` copies, and unpositions it before
 * the first record and after the last.
 */
const CURSOR_HOST = readOnlyViewHost(
  'the scan cursor is not on a record: call next() first (and read no further once it returned false)',
  'a scan cursor view is read-only',
);

/** A cursor over slots [from, to) of one table. `control` null: the calling thread owns the map, no locking. */
export class RecordCursor<K, V, F extends FieldSpec = FieldSpec> implements ScanCursor<K, V, F> {
  private slot: number;
  private readonly end: number;
  private buf: Buffer = Buffer.allocUnsafeSlow(4096);
  private dv = new DataView(this.buf.buffer);
  private keyLength = 0;
  private valueLength = 0;
  private structView: StructViewBase<F> | null = null;
  /** True while `buf` holds the record `next()` moved to last. */
  private onRecord = false;

  constructor(
    private readonly table: HashTable,
    from: number,
    to: number,
    private readonly arena: Arena,
    private readonly control: Int32Array | null,
    private readonly keysAreStrings: boolean,
    private readonly codec: MsgpackCodec | null,
    private readonly structType: StructLayout<F> | null,
    /** Readers: called when a record names a segment the reader has not mapped yet; returns false if closed. */
    private readonly refresh: () => boolean,
    /** The time records are read at: one whose expiry is at or before it is skipped. */
    private readonly now: number = Date.now(),
  ) {
    this.slot = from - 1;
    this.end = Math.min(to, table.capacity);
  }

  next(): boolean {
    const found = this.advance();
    this.onRecord = found;
    // The view follows the cursor: `copy` may have moved the record into a larger buffer.
    if (this.structView !== null) this.placeView(this.structView);
    return found;
  }

  private advance(): boolean {
    const slots = this.table.slots;
    const hashes = this.table.hashes;
    const control = this.control;
    for (;;) {
      const i = ++this.slot;
      if (i >= this.end) return false;
      if (slots[i * 2 + 1]! <= LOC_TOMBSTONE) continue;
      if (control === null) {
        if (this.copy(slots[i * 2 + 1]!)) return true;
        continue;
      }
      for (;;) {
        const h = hashes[i * 2]!;
        const st = stripeOf(h);
        const s1 = Atomics.load(control, st);
        if ((s1 & 1) !== 0) {
          if (!this.refresh()) return false; // the owner closed
          continue;
        }
        const loc = slots[i * 2 + 1]!;
        if (hashes[i * 2] !== h) continue;
        if (loc <= LOC_TOMBSTONE) break; // deleted or moved on since: skip
        if (locSegment(loc) >= this.arena.u8.length && !this.refresh()) return false;
        const live = this.copy(loc);
        if (Atomics.load(control, st) !== s1) continue;
        if (live) return true;
        break; // expired (or a header torn under a write the check above would have caught)
      }
    }
  }

  /** Positions `v` on the current record (reclaims 0, the host's), or unpositions it (-1) when there is none. */
  private placeView(v: StructViewBase<F>): void {
    v._position(this.buf, this.dv, this.keyLength, this.onRecord ? CURSOR_HOST.reclaims : -1, undefined, 0, 0);
  }

  get key(): K {
    const b = this.buf;
    // A copy: the next record overwrites `buf`, and a scan or filter keeps the keys it collected.
    return (this.keysAreStrings ? b.toString('utf8', 0, this.keyLength) : copyOf(b, 0, this.keyLength)) as K;
  }

  get value(): V {
    const start = this.keyLength;
    if (this.structType !== null) return this.structType.decodeFrom(this.buf, this.dv, start) as StructValue<F> as V;
    return this.codec!.decodePrivate(this.buf, this.dv, start, start + this.valueLength) as V;
  }

  get bytes(): Uint8Array {
    return this.buf.subarray(this.keyLength, this.keyLength + this.valueLength);
  }

  get view(): StructView<F> {
    if (this.structType === null) {
      throw new OffHeapError(OffHeapErrorCodes.INVALID_ARGUMENT, 'cursor.view needs a struct map');
    }
    if (this.structView === null) {
      const v = this.structType.createView(CURSOR_HOST) as unknown as StructViewBase<F>;
      this.placeView(v);
      this.structView = v;
    }
    return this.structView as unknown as StructView<F>;
  }

  /**
   * Copies key and value of the record at `loc` into `buf`; false if its header is not a plausible record, or the
   * record has expired.
   */
  private copy(loc: number): boolean {
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const arena = this.arena;
    const u8 = arena.u8[seg];
    if (u8 === undefined) return false;
    const expiresAt = arena.expiresAt(seg, off);
    if (expiresAt !== NO_EXPIRY && expiresAt <= this.now) return false;
    const klen = arena.keyLength(seg, off);
    const vlen = arena.valueLength(seg, off);
    const start = off + RECORD_HEADER_BYTES;
    const n = klen + vlen;
    if (start + n > u8.length) return false; // torn header: the seqlock check will retry
    if (n > this.buf.length) {
      this.buf = Buffer.allocUnsafeSlow(Math.max(n, this.buf.length * 2));
      this.dv = new DataView(this.buf.buffer);
    }
    u8.copy(this.buf, 0, start, start + n);
    this.keyLength = klen;
    this.valueLength = vlen;
    return true;
  }
}
