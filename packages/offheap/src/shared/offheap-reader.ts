import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import type { FieldSpec, StructValue } from '@heapless/struct';
import { MsgpackCodec, type Structures } from '../codec/msgpack-codec.js';
import { closedError, invalidArgument } from '../errors.js';
import { hashBytes, KeyHasher, type MapKey } from '../key-bytes.js';
import { Arena, locOffset, locSegment, NO_EXPIRY, RECORD_HEADER_BYTES } from '../memory/arena.js';
import { HashTable } from '../memory/hash-table.js';
import { StructLayout } from '../struct.js';
import type { StructView, StructViewBase } from '../struct-view.js';
import { RecordCursor, readOnlyViewHost, type ScanCursor } from './record-cursor.js';
import { CTRL_CLOSED, CTRL_LAYOUT_GENERATION, CTRL_SIZE, stripeOf } from './shared-control.js';
import type { SharedLayout, SharedMapHandle } from './shared-handle.js';

/**
 * The host of a reader's views: each holds a private copy of its record (`locate` copies it), so it never goes stale
 * and is never written; the protocol between views and their host is no part of the reader's API.
 */
const READER_VIEW_HOST = readOnlyViewHost(
  'view is not positioned (use reader.locate)',
  'views from an attached reader are read-only',
);

/**
 * A read-only view of an `OffHeapMap` from another thread (or the same one), over the owner's SharedArrayBuffers.
 *
 * Consistency model:
 * - Every read returns a value that the key held at some instant during the call: never a torn or half-written
 *   value, never bytes of a record that was being freed or reused. (Seqlock per key stripe, see
 *   shared-control.ts; the reader copies the record, then checks the stripe did not move, else retries.)
 * - Reads are not a snapshot across keys: two gets may see states from different instants.
 * - A write by the owner is visible to a reader's next read after the owner's `set` returned.
 * - The reader follows index growth and new arena segments through its handle's port (drained synchronously
 *   with `receiveMessageOnPort`, so attached readers need no event loop turn).
 * - After the owner's `close()`, reads throw CLOSED.
 *
 * A reader never blocks the owner; it may spin briefly while the owner is inside a write to the same stripe.
 */
export class OffHeapMapReader<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec> {
  /** The id of the map this reader is attached to (`SharedMapHandle.id`). */
  readonly mapId: string;
  private readonly control: Int32Array;
  private readonly port: MessagePort;
  private readonly keysAreStrings: boolean;
  private readonly structType: StructLayout<F> | null;
  private readonly codec: MsgpackCodec | null;
  private readonly hasher = new KeyHasher();
  private readonly arena = new Arena();
  /** The layout generation of the layout this reader holds. */
  private layoutGeneration: number;
  private table: HashTable;
  private old: HashTable | null;
  private buf: Buffer = Buffer.allocUnsafeSlow(4096);
  private bufView = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  private isClosed = false;
  private valueLength = 0;
  /** The expiry of the record `copyValue` copied last (NO_EXPIRY: none). */
  private expiresAt = NO_EXPIRY;
  private keyHash = 0;

  private constructor(handle: SharedMapHandle) {
    this.mapId = handle.id;
    this.control = new Int32Array(handle.control);
    this.port = handle.port;
    this.keysAreStrings = handle.keys === 'string';
    this.structType = handle.struct === null ? null : (new StructLayout(handle.struct) as StructLayout<F>);
    this.codec =
      this.structType === null
        ? new MsgpackCodec(
            handle.layout.structures.map((s) => s.slice()),
            handle.maxSharedStructures,
            () => this.refreshStructures(),
          )
        : null;
    this.layoutGeneration = -1;
    this.table = new HashTable(handle.layout.capacity, handle.layout.table);
    this.old = null;
    this.apply(handle.layout);
  }

  /** Attaches to a handle from `map.share()` (usually in a worker thread). Call `close()` when done. */
  static attach<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec>(
    handle: SharedMapHandle,
  ): OffHeapMapReader<K, V, F> {
    if (handle === null || typeof handle !== 'object' || handle.kind !== 'heapless-offheap-map') {
      throw invalidArgument('attach() needs a handle from OffHeapMap.share()');
    }
    return new OffHeapMapReader<K, V, F>(handle);
  }

  /** Entries in the map right now. */
  get size(): number {
    this.checkOpen();
    return Atomics.load(this.control, CTRL_SIZE);
  }

  /** The decoded value of `key` (a new object), or undefined. Throws CLOSED, INVALID_ARGUMENT, DECODE_FAILED. */
  get(key: K): V | undefined {
    if (!this.read(key)) return undefined;
    if (this.structType !== null) {
      return this.structType.decodeFrom(this.buf, this.bufView, 0) as StructValue<F> as V;
    }
    return this.codec!.decodePrivate(this.buf, this.bufView, 0, this.valueLength) as V;
  }

  /** True if `key` is present. */
  has(key: K): boolean {
    return this.read(key);
  }

  /** A copy of `key`'s stored value bytes, or undefined. */
  getBytes(key: K): Uint8Array | undefined {
    if (!this.read(key)) return undefined;
    return this.buf.subarray(0, this.valueLength).slice();
  }

  /** A new read-only view for a struct map; position it with `locate` (each view has its own copy). */
  view(): StructView<F> {
    if (this.structType === null) throw invalidArgument('view() needs a struct map');
    const v = this.structType.createView(READER_VIEW_HOST);
    const copy = new Uint8Array(this.structType.size);
    (v as unknown as StructViewBase<F>)._position(copy, new DataView(copy.buffer), 0, -1, undefined, 0, 0);
    return v;
  }

  /** Copies `key`'s record into `view`'s private buffer; false (view unchanged) if `key` is absent. */
  locate(key: K, view: StructView<F>): boolean {
    if (!this.read(key)) return false;
    const v = view as unknown as StructViewBase<F>;
    this.buf.copy(v._u8, 0, 0, v._u8.length);
    v._position(v._u8, v._dv, 0, 0, key, 0, this.keyHash);
    return true;
  }

  /**
   * A cursor over slots [from, to) of the table given (a table buffer from the layout the scan started with, so
   * a scan is not disturbed by growth that starts after it). Used by the parallel scan workers.
   */
  cursor(table: SharedArrayBuffer, capacity: number, from: number, to: number): ScanCursor<K, V, F> {
    this.checkOpen();
    return new RecordCursor<K, V, F>(
      new HashTable(capacity, table),
      from,
      to,
      this.arena,
      this.control,
      this.keysAreStrings,
      this.codec,
      this.structType,
      () => this.refreshNow(),
    );
  }

  /** True once `close()` was called or the owner closed the map. */
  get closed(): boolean {
    return this.isClosed || Atomics.load(this.control, CTRL_CLOSED) === 1;
  }

  /** Detaches: closes the port (the owner stops posting to it). Idempotent. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.port.close();
  }

  /** Copies the value of `key` into `buf` (value only); false if absent. */
  private read(key: K): boolean {
    let h: number;
    let len: number;
    if (this.keysAreStrings) {
      if (typeof key !== 'string') throw invalidArgument(`this map has string keys, got ${typeof key}`);
      h = this.hasher.hashString(key);
      len = this.hasher.byteLength;
    } else {
      if (!(key instanceof Uint8Array)) throw invalidArgument('this map has Uint8Array keys');
      len = key.length;
      h = hashBytes(key, 0, len);
    }
    this.keyHash = h;
    const control = this.control;
    const st = stripeOf(h);
    for (;;) {
      const s1 = Atomics.load(control, st);
      if ((s1 & 1) !== 0) {
        // The owner is inside a write of this stripe; it cannot stay there unless it closed mid-way.
        if (Atomics.load(control, CTRL_CLOSED) === 1) throw closedError('map (reader)');
        continue;
      }
      const g = Atomics.load(control, CTRL_LAYOUT_GENERATION);
      if (g !== this.layoutGeneration) {
        this.refresh(g);
        continue;
      }
      if (this.isClosed || Atomics.load(control, CTRL_CLOSED) === 1) throw closedError('map (reader)');
      let t = this.table;
      let slot = this.keysAreStrings
        ? t.findString(h, key as string, this.hasher, this.arena)
        : t.findBytes(h, key as Uint8Array, 0, len, this.arena);
      if (slot < 0 && this.old !== null) {
        t = this.old;
        slot = this.keysAreStrings
          ? t.findString(h, key as string, this.hasher, this.arena)
          : t.findBytes(h, key as Uint8Array, 0, len, this.arena);
      }
      let ok = true;
      if (slot >= 0) ok = this.copyValue(t.slots[slot * 2 + 1]!);
      if (ok && Atomics.load(control, st) === s1 && Atomics.load(control, CTRL_LAYOUT_GENERATION) === g) {
        // An expired record is absent at once, on this thread's clock (the owner's removal may come later).
        return slot >= 0 && (this.expiresAt === NO_EXPIRY || this.expiresAt > Date.now());
      }
    }
  }

  private copyValue(loc: number): boolean {
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = this.arena.u8[seg];
    if (u8 === undefined) return false;
    const start = off + RECORD_HEADER_BYTES + this.arena.keyLength(seg, off);
    const vlen = this.arena.valueLength(seg, off);
    if (start + vlen > u8.length) return false;
    if (vlen > this.buf.length) {
      this.buf = Buffer.allocUnsafeSlow(Math.max(vlen, this.buf.length * 2));
      this.bufView = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    }
    u8.copy(this.buf, 0, start, start + vlen);
    this.valueLength = vlen;
    this.expiresAt = this.arena.expiresAt(seg, off);
    return true;
  }

  private checkOpen(): void {
    if (this.isClosed || Atomics.load(this.control, CTRL_CLOSED) === 1) throw closedError('map (reader)');
  }

  /** Drains the port up to the latest layout; the owner posts before it bumps the layout generation. */
  private refresh(target: number): void {
    let latest: SharedLayout | null = null;
    while (!this.isClosed) {
      const m = receiveMessageOnPort(this.port);
      if (m === undefined) break;
      latest = m.message as SharedLayout;
    }
    if (latest !== null) this.apply(latest);
    if (this.layoutGeneration !== target && (latest === null || latest.generation < target)) {
      // Only possible once the owner closed (it closes our port): report that rather than spin.
      this.checkOpen();
      // The owner bumped the layout generation before posting a layout only for share() itself: adopt its number.
      this.layoutGeneration = target;
    }
  }

  private refreshNow(): boolean {
    if (this.isClosed || Atomics.load(this.control, CTRL_CLOSED) === 1) return false;
    this.refresh(Atomics.load(this.control, CTRL_LAYOUT_GENERATION));
    return true;
  }

  private refreshStructures(): Structures {
    this.refreshNow();
    return this.codec!.structures;
  }

  private apply(layout: SharedLayout): void {
    if (layout.table !== this.table.sab) this.table = new HashTable(layout.capacity, layout.table);
    if (layout.oldTable === null) this.old = null;
    else if (this.old === null || this.old.sab !== layout.oldTable) {
      this.old = new HashTable(layout.oldCapacity, layout.oldTable);
    }
    for (let i = this.arena.buffers.length; i < layout.segments.length; i++) this.arena.adopt(layout.segments[i]!);
    if (this.codec !== null) this.codec.update(layout.structures);
    this.layoutGeneration = layout.generation;
  }
}

/** Attaches to a shared map handle: `OffHeapMapReader.attach(handle)`. */
export const attach = OffHeapMapReader.attach;
