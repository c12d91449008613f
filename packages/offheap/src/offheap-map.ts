import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ENTRY_HEADER_SIZE, Engine, type EngineOptions, type EngineStats } from '@heapless/engine';
import { Piscina } from 'piscina';
import {
  Arena,
  LOC_TOMBSTONE,
  locOffset,
  locSegment,
  MAX_RECORD_BYTES,
  RECORD_HEADER_BYTES,
  recordBytes,
} from './arena.js';
import { closedError, invalidArgument, isOffHeapErrorCode, OffHeapError, OffHeapErrorCodes } from './errors.js';
import { HashTable, SLOT_BYTES } from './hash-table.js';
import { beginImageLoad, type ImageContent, type PendingImage, writeImage } from './image.js';
import { hashBytes, isUtf8Key, KeyHasher, writeUtf8 } from './key-bytes.js';
import { MsgpackCodec, type Structures } from './msgpack-codec.js';
import type { ImageLoader } from './native.js';
import { firstInRange, keyRangeOf, type RangeOptions, type RangePage } from './ordered-range.js';
import type { ParallelResult, ParallelTask, WorkerFunction } from './parallel-task.js';
import {
  type DirectoryState,
  directoryFromImage,
  EnginePersistence,
  FORMAT_VERSION,
  type MapMeta,
  NS_DATA,
  packImageMeta,
  prepareDirectory,
} from './persistence.js';
import { RecordCursor, type ScanCursor } from './record-cursor.js';
import { CTRL_CLOSED, CTRL_GENERATION, CTRL_SIZE, createControl, stripeOf } from './shared-control.js';
import type { SharedLayout, SharedMapHandle } from './shared-handle.js';
import { sizeClassOf } from './size-class.js';
import {
  type FieldSpec,
  type StructType,
  type StructValue,
  type StructView,
  type StructViewBase,
  type ViewHost,
  viewNotPositioned,
} from './struct.js';

/** Keys are stored with a u16 length. */
export const MAX_KEY_BYTES = 0xffff;
/** Grow when used slots (live + tombstones) would pass 3/4 of the table: linear probing degrades fast beyond. */
const MAX_LOAD = 0.75;
/** A new table is the smallest power of two holding the live entries at most this full (so 3/8 after doubling). */
const SIZING_LOAD = 0.7;
const MIN_CAPACITY = 16;
/** Default msgpackr shared structures: up to 32 keeps structure ids one byte long. */
const DEFAULT_SHARED_STRUCTURES = 32;
/** Default size of the buffer the load at open reads into: large enough that a scan call costs little per entry. */
const LOAD_BUFFER_BYTES = 1 << 20;

export type MapKey = string | Uint8Array;

/** Options of a memory-only map (`new OffHeapMap(options)`); `OffHeapMap.open` adds persistence options. */
export interface OffHeapMapOptions<F extends FieldSpec = FieldSpec> {
  /** Key kind: `'string'` (default; stored as UTF-8) or `'bytes'` (Uint8Array keys). */
  keys?: 'string' | 'bytes';
  /** Store values as this fixed struct layout instead of msgpack. */
  struct?: StructType<F>;
  /** Expected number of entries: sizes the index up front (the map grows by itself either way). */
  capacity?: number;
  /** msgpackr shared structures kept (default 32; above 32 structure ids take two bytes). */
  maxSharedStructures?: number;
  /** Worker threads for `scan`, `filter` and `getMany` (default: the number of cores). Started on first use. */
  threads?: number;
}

/** Options of `OffHeapMap.open`: a map persisted in an engine directory. */
export interface OffHeapMapOpenOptions<F extends FieldSpec = FieldSpec> extends OffHeapMapOptions<F> {
  /** The engine directory (created if missing). One map per directory; the engine locks it. */
  dir: string;
  /**
   * Durability of each write: true = `durable()` resolves after an fdatasync covering the write (group-committed
   * by the engine); false (default) = after the write is in the engine's WAL file (write(2) returned), so it
   * survives the process being killed, and a power loss may lose a suffix of writes but never one in the middle.
   */
  sync?: boolean;
  /** Engine tuning passed to `Engine.open` (its `sync` comes from above). */
  engine?: Omit<EngineOptions, 'sync'>;
  /** Size of the buffer the load at open reads entries into (default 1 MiB; grows for an entry that does not fit). */
  loadBufferBytes?: number;
  /**
   * Keep a map image (default true): `close()` writes the map's memory to `MAPIMAGE` in `dir`, and the next `open`
   * maps it back in about the time reading the file takes, instead of rebuilding the map entry by entry. An image
   * is used only if it matches the engine exactly (see FORMAT.md §10); otherwise the open scans the engine.
   */
  image?: boolean;
}

/** How a map got its contents (`stats().loadedFrom`). */
export type MapSource = 'memory' | 'scan' | 'image';

/** Memory accounting of a map; every byte figure is off the JS heap (in SharedArrayBuffers). */
export interface OffHeapMapStats {
  entries: number;
  /** Bytes of index tables (two while growing). */
  indexBytes: number;
  indexCapacity: number;
  /** Used slots (live and tombstones) over capacity of the table inserts go to. */
  loadFactor: number;
  tombstones: number;
  /** True while the index is moving slots to a larger table. */
  growing: boolean;
  /** Bytes of all arena segments. */
  arenaBytes: number;
  /** Arena bytes handed out so far (live + garbage). */
  arenaUsedBytes: number;
  /** Bytes of blocks holding live records (header, key, value, class padding). */
  liveBytes: number;
  /** Bytes of headers, keys and values of live records, without padding. */
  payloadBytes: number;
  /** Bytes of freed blocks waiting for reuse, plus unusable segment tails. */
  garbageBytes: number;
  segments: number;
  /** `'memory'`: a memory-only map; `'scan'`: rebuilt from the engine at open; `'image'`: loaded from its map image. */
  loadedFrom: MapSource;
  /** How the image was read when `loadedFrom` is `'image'` (`'mapped'` by the native helper, or `'read'`), else null. */
  imageLoader: ImageLoader | null;
  /** Why the open scanned instead of using the map image (`'no image'`, stale, checksum mismatch...), else null. */
  imageRejected: string | null;
}

/** What persistence needs to write the map image at close. */
export interface ImageHooks {
  /** The engine sequence the map's image was loaded at (-1 if none): a map still at it keeps that image. */
  loadedSequence: number;
  /** Writes the image, tagged with `id` and the engine's last `sequence`. */
  write(id: Uint8Array, sequence: number): void;
}

/**
 * Receives one entry: key `b[keyOff, keyOff+keyLen)`, then its value's `valueLen` bytes (a view valid during the
 * call); false stops the walk.
 */
export type EntryVisitor = (b: Buffer, keyOff: number, keyLen: number, valueLen: number) => boolean;

/** The durable side of a map, implemented over `@heapless/engine` (see persistence.ts). */
export interface MapPersistence {
  /** Visits at most `limit` entries in [`lower`, `upper`), in key byte order (see persistence.ts). */
  entriesInRange(lower: Uint8Array, upper: Uint8Array | null, limit: number, visit: EntryVisitor): void;
  /** Records that `key` now maps to `value` (views into the arena: copied before returning). */
  put(key: Uint8Array, value: Uint8Array, structures: Structures | null): void;
  del(key: Uint8Array): void;
  /** Resolves when every write recorded so far is durable at the map's sync level; rejects with the first failure. */
  durable(): Promise<void>;
  /** Resolves when every write recorded so far is fsynced. */
  flush(): Promise<void>;
  /** The first write failure, once there is one. */
  readonly failure: unknown;
  /** The engine's counters and level sizes, for monitoring. */
  engineStats(): EngineStats;
  /**
   * Waits for pending writes, writes the map image through `image` (if given) and closes the engine; `entries` is
   * recorded to size the index at the next open.
   */
  close(entries: number, image: ImageHooks | null): Promise<void>;
}

/**
 * A Map-like store whose keys and values live in SharedArrayBuffers, not on the JS heap.
 *
 * Keys are strings (stored as their UTF-8 bytes) or Uint8Arrays. A string key must be well-formed UTF-16: every
 * method that takes a key throws INVALID_ARGUMENT for one with a lone surrogate, which has no UTF-8 form of its own.
 *
 * All reads and writes are synchronous and immediately visible. Values are msgpack (records with shared
 * structures) by default, or a fixed `struct` layout read and written in place through views. A map from
 * `OffHeapMap.open({ dir })` also writes every mutation to `@heapless/engine`; see `durable()` and `flush()`.
 *
 * Ownership: the creating thread owns the map and is the only writer; other threads read through `share()` /
 * `attach()`. Call `close()` when done: it ends persistence, the worker pool and every reader's access.
 *
 * Iteration: deleting while iterating is safe (like Map). Inserting may grow the index; an iteration running
 * across growth can yield a key twice or miss it, so collect keys first if you insert while iterating.
 */
export class OffHeapMap<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec> implements ViewHost {
  /** Reclaim epoch (ViewHost): changes whenever arena space is freed, so views re-check their record. */
  epoch = 0;
  private readonly keysAreStrings: boolean;
  private readonly structType: StructType<F> | null;
  private readonly codec: MsgpackCodec | null;
  private readonly maxSharedStructures: number;
  private readonly hasher = new KeyHasher();
  private readonly arena: Arena;
  private table: HashTable;
  private old: HashTable | null = null;
  private migrateCursor = 0;
  private migrateBatch = 0;
  private readonly control: Int32Array;
  private shared = false;
  private readonly ports: MessagePort[] = [];
  private generation = 0;
  private count = 0;
  private payload = 0;
  private closed = false;
  private pins = 0;
  private persistence: MapPersistence | null = null;
  /** Where `close()` writes the map image (null: no image). */
  private imageDir: string | null = null;
  /** What a persisted map's engine records about it (carried by its image). */
  private meta: MapMeta | null = null;
  private loadedSequence = -1;
  private loadedFrom: MapSource = 'memory';
  private imageLoader: ImageLoader | null = null;
  private imageRejected: string | null = null;
  private readonly threads: number;
  private pool: Piscina | null = null;
  private readonly id = randomUUID();
  /** Set by `find`: the table the key was found in. */
  private foundTable: HashTable;
  /** Set by `find`: the key's hash and UTF-8 length. */
  private keyHash = 0;
  private keyLength = 0;
  /** Struct maps: one record's worth of scratch, so `set` validates and encodes before touching the arena. */
  private readonly scratch: Uint8Array;
  private readonly scratchView: DataView;

  /**
   * A memory-only map. Throws INVALID_ARGUMENT on bad options. (`structures` is for `open`: the msgpackr structure
   * table read back from disk.)
   */
  constructor(options: OffHeapMapOptions<F> = {}, structures: Structures = []) {
    const keys = options.keys ?? 'string';
    if (keys !== 'string' && keys !== 'bytes') throw invalidArgument(`keys must be 'string' or 'bytes', got ${keys}`);
    this.keysAreStrings = keys === 'string';
    this.structType = options.struct ?? null;
    this.maxSharedStructures = options.maxSharedStructures ?? DEFAULT_SHARED_STRUCTURES;
    this.codec =
      this.structType === null
        ? new MsgpackCodec(structures, this.maxSharedStructures, () => this.publish(), null)
        : null;
    const size = this.structType?.size ?? 0;
    this.scratch = new Uint8Array(size);
    this.scratchView = new DataView(this.scratch.buffer);
    this.control = createControl();
    this.arena = new Arena(() => this.publish());
    const expected = options.capacity ?? 0;
    if (!Number.isInteger(expected) || expected < 0) throw invalidArgument(`capacity must be an integer ≥ 0`);
    this.table = new HashTable(capacityFor(expected));
    this.foundTable = this.table;
    this.threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(this.threads) || this.threads < 1) throw invalidArgument('threads must be an integer ≥ 1');
  }

  /**
   * Opens (or creates) a persisted map in `options.dir`: opens the engine, checks the directory holds a map of the
   * same key kind and codec, and rebuilds the index and arena with one sequential scan of the engine. Every later
   * mutation is written to the engine as it happens. The caller must `close()` the map (which closes the engine).
   * Rejects with INCOMPATIBLE (directory holds another kind of map), the engine's errors (LOCKED, IO,
   * CorruptionError), or this constructor's.
   */
  static async open<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec>(
    options: OffHeapMapOpenOptions<F>,
  ): Promise<OffHeapMap<K, V, F>> {
    if (typeof options?.dir !== 'string') throw invalidArgument('open() needs options.dir');
    const sync = options.sync ?? false;
    const useImage = options.image ?? true;
    // The image's sections are mapped and checksummed on a native thread while the engine opens.
    const pending = useImage ? beginImageLoad(options.dir) : 'map images disabled';
    let engine: Engine;
    try {
      engine = await Engine.open(options.dir, { ...options.engine, sync });
    } catch (err) {
      if (typeof pending !== 'string') pending.drop();
      throw err;
    }
    try {
      const want: MapMeta = {
        format: FORMAT_VERSION,
        keys: options.keys ?? 'string',
        codec: options.struct === undefined ? 'msgpack' : 'struct',
        struct: options.struct === undefined ? null : options.struct.signature,
      };
      const { state, image } = await directoryAndImage(engine, want, pending);
      let map: OffHeapMap<K, V, F>;
      if (typeof image === 'string') {
        map = new OffHeapMap<K, V, F>(
          { ...options, capacity: Math.max(options.capacity ?? 0, state.countHint) },
          state.structures,
        );
        await map.loadFromEngine(engine, options.loadBufferBytes ?? LOAD_BUFFER_BYTES);
        map.loadedFrom = 'scan';
        map.imageRejected = image;
      } else {
        map = new OffHeapMap<K, V, F>({ ...options, capacity: 0 }, state.structures);
        map.restore(image);
        map.loadedFrom = 'image';
        map.imageLoader = typeof pending === 'string' ? null : pending.loader;
        map.loadedSequence = image.sequence;
      }
      map.persistence = new EnginePersistence(engine, sync);
      map.imageDir = useImage ? options.dir : null;
      map.meta = want;
      return map;
    } catch (err) {
      await engine.close();
      throw err;
    }
  }

  /**
   * Resolves when every mutation made so far is durable at the map's `sync` level (see `open`); at once for a
   * memory-only map. Rejects with PERSIST_FAILED if an engine write failed (the map then refuses writes).
   */
  durable(): Promise<void> {
    return this.persistence === null ? Promise.resolve() : this.persistence.durable();
  }

  /** Like `durable()`, but forces an fdatasync of every write so far whatever the `sync` level. */
  flush(): Promise<void> {
    return this.persistence === null ? Promise.resolve() : this.persistence.flush();
  }

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  /** The decoded value for `key` (a new object each call), or undefined. Throws DECODE_FAILED, INVALID_ARGUMENT. */
  get(key: K): V | undefined {
    const slot = this.find(key);
    if (slot < 0) return undefined;
    const loc = this.foundTable.slots[slot * 2 + 1]!;
    const off = locOffset(loc);
    return this.decodeValue(locSegment(loc), off, off + RECORD_HEADER_BYTES + this.keyLength);
  }

  /** True if `key` is present. */
  has(key: K): boolean {
    return this.find(key) >= 0;
  }

  /** A copy of the stored bytes of `key`'s value (msgpack or struct layout), or undefined. */
  getBytes(key: K): Uint8Array | undefined {
    const slot = this.find(key);
    if (slot < 0) return undefined;
    const loc = this.foundTable.slots[slot * 2 + 1]!;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const start = off + RECORD_HEADER_BYTES + this.keyLength;
    return copyOf(this.arena.u8[seg]!, start, start + this.arena.valueLength(seg, off));
  }

  /**
   * Stores `value` under `key` (msgpack-encoded, or laid out as the map's struct) and returns the map.
   * Throws ENCODE_FAILED / FIELD_OVERFLOW (value refused, map unchanged), KEY_TOO_LARGE, VALUE_TOO_LARGE,
   * PERSIST_FAILED (an earlier engine write failed), CLOSED.
   */
  set(key: K, value: V): this {
    this.checkWritable();
    if (this.structType !== null) {
      this.structType.encodeInto(value as StructValue<F>, this.scratch, this.scratchView, 0);
      this.store(key, this.scratch, this.scratch.length);
    } else {
      const bytes = this.codec!.encode(value);
      this.store(key, bytes, bytes.length);
    }
    return this;
  }

  /**
   * Stores already-serialized value bytes as they are (no decode). For struct maps `bytes` must be exactly the
   * struct's size. Same errors as `set`.
   */
  setBytes(key: K, bytes: Uint8Array): this {
    this.checkWritable();
    if (!(bytes instanceof Uint8Array)) throw invalidArgument('setBytes needs a Uint8Array value');
    if (this.structType !== null && bytes.length !== this.structType.size) {
      throw invalidArgument(`struct values are ${this.structType.size} bytes, got ${bytes.length}`);
    }
    this.store(key, bytes, bytes.length);
    return this;
  }

  /** Removes `key`; true if it was present. Throws PERSIST_FAILED, CLOSED. */
  delete(key: K): boolean {
    this.checkWritable();
    const slot = this.find(key);
    if (slot < 0) return false;
    const t = this.foundTable;
    const loc = t.slots[slot * 2 + 1]!;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const klen = this.keyLength;
    const kstart = off + RECORD_HEADER_BYTES;
    // The engine copies the key before returning, but the block is freed below: take the view first, write after.
    const keyCopy = this.persistence === null ? null : this.arena.u8[seg]!.slice(kstart, kstart + klen);
    this.payload -= recordBytes(klen, this.arena.valueLength(seg, off));
    const h = this.keyHash;
    this.lock(h);
    t.slots[slot * 2 + 1] = LOC_TOMBSTONE;
    this.arena.free(loc);
    this.unlock(h);
    t.live--;
    t.tombstones++;
    this.count--;
    this.epoch++;
    if (this.shared) Atomics.store(this.control, CTRL_SIZE, this.count);
    if (keyCopy !== null) this.persistence!.del(keyCopy);
    return true;
  }

  /**
   * One page of the entries whose keys start with `prefix` and lie at or after `gte` (or after `gt`) and before
   * `lt`, in key order — the byte order of the keys (of their UTF-8 for string keys: Unicode code point order) —
   * each with a copy of its value's stored bytes; at most `limit` (default 100) entries, fewer once they take
   * `maxBytes`. `more` is true when entries of the range follow the page: ask again with `gt` = the last key.
   *
   * Cost: a persisted map reads the page from the engine's sorted iterator (one seek, then the page: O(log N +
   * page); table blocks not in the block cache are read from disk, synchronously). The engine holds every write of
   * the map as soon as the write returns, so the page is what `getBytes` would answer. A memory-only map has no
   * ordered index: a page costs one pass over the hash index — every key compared where it lies, no copy or string
   * for a key outside the page, O(N) per page.
   *
   * Synchronous: the page is the map at the call. Throws INVALID_ARGUMENT (bad options, a bound of the wrong kind or
   * with a lone surrogate), PERSIST_FAILED (an engine write failed, so the engine's keys may not be the map's),
   * CLOSED, or the engine's errors (CorruptionError reading a table).
   */
  range(options: RangeOptions<K> = {}): RangePage<K> {
    if (this.closed) throw closedError('map');
    if (typeof options !== 'object' || options === null) throw invalidArgument('range(options: object)');
    const limit = options.limit ?? 100;
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (!Number.isInteger(limit) || limit < 1) throw invalidArgument('range: limit must be an integer ≥ 1');
    if (!(maxBytes >= 1)) throw invalidArgument('range: maxBytes must be ≥ 1');
    const persistence = this.persistence;
    if (persistence !== null && persistence.failure !== undefined) {
      throw new OffHeapError(
        OffHeapErrorCodes.PERSIST_FAILED,
        'an earlier engine write failed: the engine may not hold every key of the map, so it cannot order them',
        { cause: persistence.failure },
      );
    }
    const page: RangePage<K> = { entries: [], more: false };
    const range = keyRangeOf(options, this.keysAreStrings);
    if (range === null) return page;
    let bytes = 0;
    /** Adds the entry (key `b[off, off+len)`, then `vlen` value bytes) to the page, or says the page is full. */
    const add = (b: Buffer, off: number, len: number, vlen: number): boolean => {
      if (page.entries.length === limit || bytes >= maxBytes) {
        page.more = true;
        return false;
      }
      const key = (
        this.keysAreStrings ? Buffer.prototype.utf8Slice.call(b, off, off + len) : copyOf(b, off, off + len)
      ) as K;
      page.entries.push([key, copyOf(b, off + len, off + len + vlen)]);
      bytes += len + vlen;
      return true;
    };
    if (persistence !== null) {
      persistence.entriesInRange(range.lower, range.upper, limit + 1, add);
      return page;
    }
    const arena = this.arena;
    for (const loc of firstInRange(
      this.old === null ? [this.table] : [this.old, this.table],
      arena,
      range,
      limit + 1,
    )) {
      const seg = locSegment(loc);
      const off = locOffset(loc);
      if (!add(arena.u8[seg]!, off + RECORD_HEADER_BYTES, arena.keyLength(seg, off), arena.valueLength(seg, off))) {
        break;
      }
    }
    return page;
  }

  /** Removes every entry (one persisted delete per key). */
  clear(): void {
    this.checkWritable();
    for (const k of Array.from(this.keys())) this.delete(k);
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

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  /** Calls `fn(value, key, map)` for each entry, like Map#forEach. */
  forEach(fn: (value: V, key: K, map: this) => void): void {
    for (const [seg, off] of this.records()) fn(this.readValue(seg, off), this.readKey(seg, off), this);
  }

  /**
   * A new flyweight view for this struct map; position it with `locate`. Reading a field decodes only that field;
   * assigning a field writes it in place (persisted like `set`). A view follows its key: if the record was
   * replaced it re-finds it, if the key was deleted it throws VIEW_NOT_POSITIONED. Throws INVALID_ARGUMENT on a
   * msgpack map.
   */
  view(): StructView<F> {
    if (this.structType === null) throw invalidArgument('view() needs a map created with { struct }');
    return this.structType.createView(this);
  }

  /** Positions `view` on `key`'s record; false (view unchanged) if `key` is absent. No allocation. */
  locate(key: K, view: StructView<F>): boolean {
    const slot = this.find(key);
    if (slot < 0) return false;
    const loc = this.foundTable.slots[slot * 2 + 1]!;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const arena = this.arena;
    const start = off + RECORD_HEADER_BYTES + this.keyLength;
    (view as StructViewBase<F>)._position(arena.u8[seg]!, arena.dv[seg]!, start, this.epoch, key, loc, this.keyHash);
    return true;
  }

  /** ViewHost: re-finds a view's key after space was reclaimed. */
  revalidate<G extends FieldSpec>(view: StructViewBase<G>): void {
    if (view._epoch === -1) throw new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, 'view is not positioned');
    if (this.closed) throw closedError('map');
    if (!this.locate(view._key as K, view as unknown as StructView<F>)) throw viewNotPositioned(view._key);
  }

  /** ViewHost: before an in-place field write. */
  beginWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.checkWritable();
    this.lock(view._hash);
  }

  /** ViewHost: after an in-place field write — publish and persist the record. */
  endWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.unlock(view._hash);
    if (this.persistence !== null) {
      const loc = view._loc;
      const seg = locSegment(loc);
      const off = locOffset(loc);
      const u8 = this.arena.u8[seg]!;
      const kstart = off + RECORD_HEADER_BYTES;
      const vstart = kstart + this.arena.keyLength(seg, off);
      this.persistence.put(
        u8.subarray(kstart, vstart),
        u8.subarray(vstart, vstart + this.arena.valueLength(seg, off)),
        null,
      );
    }
  }

  /** Memory accounting; see OffHeapMapStats. */
  stats(): OffHeapMapStats {
    const a = this.arena;
    const t = this.table;
    return {
      entries: this.count,
      indexBytes: t.capacity * SLOT_BYTES + (this.old === null ? 0 : this.old.capacity * SLOT_BYTES),
      indexCapacity: t.capacity,
      loadFactor: (t.live + t.tombstones) / t.capacity,
      tombstones: t.tombstones + (this.old === null ? 0 : this.old.tombstones),
      growing: this.old !== null,
      arenaBytes: a.reservedBytes,
      arenaUsedBytes: a.usedBytes,
      liveBytes: a.liveBytes,
      payloadBytes: this.payload,
      garbageBytes: a.freeBytes + a.wasteBytes,
      segments: a.buffers.length,
      loadedFrom: this.loadedFrom,
      imageLoader: this.imageLoader,
      imageRejected: this.imageRejected,
    };
  }

  /** The persisting engine's stats (levels, flushes, compactions, stalls...), or undefined for a memory-only map. */
  engineStats(): EngineStats | undefined {
    return this.persistence?.engineStats();
  }

  /** Index and arena state as text, for tests and debugging (lists every slot: small maps only). */
  dump(): string {
    const parts = [`map entries=${this.count} generation=${this.generation}`, this.table.dump()];
    if (this.old !== null) parts.push(`draining from slot ${this.migrateCursor}:`, this.old.dump());
    parts.push(this.arena.dump());
    return parts.join('\n');
  }

  /**
   * A handle another thread can `attach()` to for reading this map's memory (see offheap-reader.ts for the
   * consistency model). Post it with its port transferred: `worker.postMessage(h, [h.port])`. The reader's
   * `close()` releases it; the map's `close()` ends every reader's access.
   */
  share(): SharedMapHandle {
    if (this.closed) throw closedError('map');
    const { port1, port2 } = new MessageChannel();
    port1.unref();
    port1.on('close', () => {
      const i = this.ports.indexOf(port1);
      if (i >= 0) this.ports.splice(i, 1);
    });
    this.ports.push(port1);
    this.shared = true;
    Atomics.store(this.control, CTRL_SIZE, this.count);
    Atomics.store(this.control, CTRL_GENERATION, this.generation);
    return {
      kind: 'heapless-offheap-map',
      id: this.id,
      keys: this.keysAreStrings ? 'string' : 'bytes',
      struct: this.structType === null ? null : this.structType.fields,
      maxSharedStructures: this.maxSharedStructures,
      control: this.control.buffer as SharedArrayBuffer,
      layout: this.layout(),
      port: port2,
    };
  }

  /**
   * Runs `fn(cursor, arg)` from a worker module once per partition of the index, on `threads` worker threads in
   * parallel, and resolves to the results in partition order (combine them yourself). The function sees records
   * through a ScanCursor. Writes made while the scan runs may or may not be seen; growth of the index is paused
   * while scans run (unless the new table fills, then a key moved during the scan may be seen twice or missed).
   * Rejects with WORKER_FAILED (the worker's error as cause) or CLOSED.
   */
  async scan<R>(fn: WorkerFunction, partitions = this.threads * 4): Promise<R[]> {
    return (await this.runPartitions('scan', fn, partitions)) as R[];
  }

  /**
   * Entries for which the worker module's predicate `(value, key, arg) => boolean` is true, evaluated on worker
   * threads. Same concurrency rules as `scan`.
   */
  async filter(fn: WorkerFunction, partitions = this.threads * 4): Promise<[K, V][]> {
    const parts = (await this.runPartitions('filter', fn, partitions)) as [K, V][][];
    return parts.flat();
  }

  /** Decoded values of `keys` (undefined where absent), looked up on worker threads in parallel. */
  async getMany(keys: readonly K[]): Promise<(V | undefined)[]> {
    if (this.closed) throw closedError('map');
    if (keys.length === 0) return [];
    const pool = this.workerPool();
    const chunk = Math.ceil(keys.length / this.threads);
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < keys.length; i += chunk) {
      const handle = this.share();
      const task: ParallelTask = { op: 'getMany', handle, keys: keys.slice(i, i + chunk) };
      runs.push(this.runTask(pool, task, handle));
    }
    return ((await settleAll(runs)) as (V | undefined)[][]).flat();
  }

  /** `fn(cursor, arg)` over the whole map on the calling thread: the single-threaded counterpart of `scan`. */
  scanSync<R>(fn: (cursor: ScanCursor<K, V, F>, arg: unknown) => R, arg?: unknown): R[] {
    if (this.closed) throw closedError('map');
    const out: R[] = [];
    for (const t of this.old === null ? [this.table] : [this.old, this.table]) {
      const cursor = new RecordCursor<K, V, F>(
        t,
        0,
        t.capacity,
        this.arena,
        null,
        this.keysAreStrings,
        this.codec,
        this.structType,
        () => true,
      );
      out.push(fn(cursor, arg));
    }
    return out;
  }

  /**
   * Ends the map: waits for pending engine writes, closes the engine, marks the shared memory closed for readers
   * and closes their ports. Idempotent. The map's memory is released when no reader holds it any more.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    Atomics.store(this.control, CTRL_CLOSED, 1);
    for (const p of this.ports.splice(0)) p.close();
    const pool = this.pool;
    this.pool = null;
    if (pool !== null) await pool.destroy();
    const persistence = this.persistence;
    this.persistence = null;
    if (persistence !== null) {
      const dir = this.imageDir;
      await persistence.close(
        this.count,
        dir === null
          ? null
          : {
              loadedSequence: this.loadedSequence,
              write: (id, sequence) =>
                writeImage(dir, this.imageContent(id, sequence), (i) => this.arena.usedBytesOf(i)),
            },
      );
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- internals --------------------------------------------------------------------------------------------

  private workerPool(): Piscina {
    if (this.pool === null) {
      this.pool = new Piscina({
        filename: new URL('../dist/parallel-worker.js', import.meta.url).href,
        minThreads: this.threads,
        maxThreads: this.threads,
      });
    }
    return this.pool;
  }

  private async runTask(pool: Piscina, task: ParallelTask, handle: SharedMapHandle): Promise<unknown> {
    let r: ParallelResult;
    try {
      r = (await pool.run(task, { transferList: [handle.port] })) as ParallelResult;
    } catch (err) {
      throw new OffHeapError(
        OffHeapErrorCodes.WORKER_FAILED,
        `parallel ${task.op} failed in a worker: ${String(err)}`,
        {
          cause: err,
        },
      );
    }
    if (r.ok) return r.value;
    const cause = new Error(r.message);
    cause.stack = r.stack;
    if (isOffHeapErrorCode(r.code)) throw new OffHeapError(r.code, r.message, { cause });
    throw new OffHeapError(OffHeapErrorCodes.WORKER_FAILED, `parallel ${task.op} failed in a worker: ${r.message}`, {
      cause,
    });
  }

  private async runPartitions(op: 'scan' | 'filter', fn: WorkerFunction, partitions: number): Promise<unknown[]> {
    if (this.closed) throw closedError('map');
    // A URL (file:, data:) as it is; anything else is a path.
    const module =
      fn.module instanceof URL
        ? fn.module.href
        : /^[a-z][a-z0-9+.-]+:/i.test(fn.module)
          ? fn.module
          : pathToFileURL(fn.module).href;
    const pool = this.workerPool();
    const tables = this.old === null ? [this.table] : [this.old, this.table];
    const total = tables.reduce((n, t) => n + t.capacity, 0);
    const per = Math.max(1024, Math.ceil(total / Math.max(1, partitions)));
    const runs: Promise<unknown>[] = [];
    this.pins++;
    try {
      for (const t of tables) {
        for (let from = 0; from < t.capacity; from += per) {
          const handle = this.share();
          const task: ParallelTask = {
            op,
            handle,
            table: t.sab,
            capacity: t.capacity,
            from,
            to: Math.min(t.capacity, from + per),
            module,
            name: fn.name ?? 'default',
            arg: fn.arg,
          };
          runs.push(this.runTask(pool, task, handle));
        }
      }
      return await settleAll(runs);
    } finally {
      this.pins--;
    }
  }

  /** Slot of `key` (setting foundTable, keyHash, keyLength) or -1. */
  private find(key: K): number {
    let slot: number;
    if (this.keysAreStrings) {
      if (typeof key !== 'string') throw invalidArgument(`this map has string keys, got ${typeof key}`);
      const h = this.hasher.hashString(key);
      const len = this.hasher.byteLength;
      this.keyHash = h;
      this.keyLength = len;
      slot = this.table.findString(h, key, this.hasher, this.arena);
      if (slot >= 0) {
        this.foundTable = this.table;
        return slot;
      }
      if (this.old === null) return -1;
      slot = this.old.findString(h, key, this.hasher, this.arena);
    } else {
      if (!(key instanceof Uint8Array)) throw invalidArgument('this map has Uint8Array keys');
      const len = key.length;
      const h = hashBytes(key, 0, len);
      this.keyHash = h;
      this.keyLength = len;
      slot = this.table.findBytes(h, key, 0, len, this.arena);
      if (slot >= 0) {
        this.foundTable = this.table;
        return slot;
      }
      if (this.old === null) return -1;
      slot = this.old.findBytes(h, key, 0, len, this.arena);
    }
    if (slot >= 0) this.foundTable = this.old;
    return slot;
  }

  /**
   * Rebuilds index and arena with one sequential scan of the engine's data range, through its bulk read: entries
   * are copied straight from blocks into one reused buffer (no key/value copies, no arrays per entry).
   */
  private async loadFromEngine(engine: Engine, bufferBytes: number): Promise<void> {
    const it = engine.iterator({ gte: Uint8Array.of(NS_DATA), lt: Uint8Array.of(NS_DATA + 1), fillCache: false });
    try {
      let buf = new Uint8Array(bufferBytes);
      let dv = new DataView(buf.buffer);
      for (;;) {
        const end = it.nextvInto(buf, 0);
        if (end === 0) break;
        if (end < 0) {
          buf = new Uint8Array(Math.max(-end, buf.length * 2));
          dv = new DataView(buf.buffer);
          continue;
        }
        for (let p = 0; p < end; ) {
          const klen = dv.getUint32(p, true);
          const vlen = dv.getUint32(p + 4, true);
          p += ENTRY_HEADER_SIZE;
          this.load(buf.subarray(p, p + klen), buf.subarray(p + klen, p + klen + vlen));
          p += klen + vlen;
        }
      }
    } finally {
      await it.close();
    }
  }

  /** Takes the memory of a map image (a fresh map only). */
  private restore(image: ImageContent): void {
    this.arena.restore(image.segments, image.arena);
    this.table = new HashTable(image.capacity, image.table);
    this.table.live = image.live;
    this.table.tombstones = image.tombstones;
    this.foundTable = this.table;
    this.count = image.entries;
    this.payload = image.payload;
  }

  /** The map's memory as an image (after any growth has finished). */
  private imageContent(id: Uint8Array, sequence: number): ImageContent {
    if (this.old !== null) this.migrate(this.old.capacity);
    const t = this.table;
    return {
      id,
      sequence,
      entries: this.count,
      payload: this.payload,
      table: t.sab,
      capacity: t.capacity,
      live: t.live,
      tombstones: t.tombstones,
      segments: this.arena.buffers,
      arena: this.arena.state(),
      meta: packImageMeta(this.meta!, this.codec === null ? [] : this.codec.snapshot()),
    };
  }

  /**
   * Adds a record read back from the engine at open: `engineKey` is the namespace byte then the key. Engine keys
   * are unique and hash and compare like their string, so no lookup is needed; nothing is persisted. A string map
   * refuses (INCOMPATIBLE) a key whose bytes are not UTF-8: no string key names it, and decoding it with
   * replacement characters would alias it with another key.
   */
  private load(engineKey: Uint8Array, value: Uint8Array): void {
    if (this.keysAreStrings && !isUtf8Key(engineKey, 1, engineKey.length - 1)) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `the engine holds key 0x${Buffer.from(engineKey.subarray(1, 65)).toString('hex')} which is not UTF-8: a map of string keys cannot hold it (open it with keys: 'bytes')`,
      );
    }
    if (this.structType !== null && value.length !== this.structType.size) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `stored struct value of ${value.length} bytes, the layout is ${this.structType.size} bytes`,
      );
    }
    this.keyHash = hashBytes(engineKey, 1, engineKey.length - 1);
    this.keyLength = engineKey.length - 1;
    this.store(engineKey as K, value, value.length, true);
  }

  /**
   * Inserts or replaces `key` with `vlen` bytes of `src` (from 0). `loading`: from `load` (the key is an engine
   * key, already hashed; do not persist).
   */
  private store(key: K, src: Uint8Array, vlen: number, loading = false): void {
    const slot = loading ? -1 : this.find(key);
    const klen = this.keyLength;
    const h = this.keyHash;
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
      const t = this.foundTable;
      const oldLoc = t.slots[slot * 2 + 1]!;
      const seg = locSegment(oldLoc);
      const off = locOffset(oldLoc);
      this.payload -= recordBytes(klen, arena.valueLength(seg, off));
      if (arena.sizeClass(seg, off) === sizeClassOf((bytes + 7) >>> 3)) {
        // Same block size: overwrite the value in place.
        this.lock(h);
        arena.setValueLength(seg, off, vlen);
        arena.u8[seg]!.set(src, off + RECORD_HEADER_BYTES + klen);
        this.unlock(h);
        loc = oldLoc;
      } else {
        loc = arena.alloc(bytes);
        this.writeRecord(loc, key, klen, src, vlen, 0);
        this.lock(h);
        t.slots[slot * 2 + 1] = loc;
        arena.free(oldLoc);
        this.unlock(h);
        this.epoch++;
      }
    } else {
      let grew = false;
      if (this.table.live + this.table.tombstones + 1 > this.table.capacity * MAX_LOAD) {
        this.grow();
        grew = true;
      }
      const t = this.table;
      loc = arena.alloc(bytes);
      this.writeRecord(loc, key, klen, src, vlen, loading ? 1 : 0);
      const i = grew || loading ? t.freeSlotFor(h) : t.insertAt;
      if (t.slots[i * 2 + 1] === LOC_TOMBSTONE) t.tombstones--;
      this.lock(h);
      t.slots[i * 2] = h;
      t.slots[i * 2 + 1] = loc;
      this.unlock(h);
      t.live++;
      this.count++;
      if (this.shared) Atomics.store(this.control, CTRL_SIZE, this.count);
    }
    this.payload += bytes;
    if (this.old !== null && this.pins === 0) this.migrate(this.migrateBatch);
    if (!loading && this.persistence !== null) {
      const seg = locSegment(loc);
      const off = locOffset(loc);
      const u8 = arena.u8[seg]!;
      const vstart = off + RECORD_HEADER_BYTES + klen;
      const structures = this.codec?.takeDirty() ? this.codec.snapshot() : null;
      this.persistence.put(
        u8.subarray(off + RECORD_HEADER_BYTES, vstart),
        u8.subarray(vstart, vstart + vlen),
        structures,
      );
    }
  }

  /**
   * Fills a freshly allocated block (invisible to readers until a slot points at it). A byte key's bytes start at
   * `keyOff` (1 for engine keys, which carry a namespace byte).
   */
  private writeRecord(loc: number, key: K, klen: number, src: Uint8Array, vlen: number, keyOff: number): void {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = arena.u8[seg]!;
    arena.writeHeader(seg, off, klen, vlen);
    const kstart = off + RECORD_HEADER_BYTES;
    if (typeof key === 'string') {
      // `find` just hashed this key: a short ASCII key is already in words (the last word's spare bytes are
      // overwritten by the value below, and stay inside the 8-byte-aligned block).
      const hasher = this.hasher;
      if (hasher.wordsValid) {
        const words = hasher.words;
        const i32 = arena.i32[seg]!;
        const w = kstart >>> 2;
        for (let i = 0, n = (klen + 3) >>> 2; i < n; i++) i32[w + i] = words[i]!;
      } else writeUtf8(key, u8, kstart);
    } else if (keyOff === 0) u8.set(key as Uint8Array, kstart);
    else for (let i = 0; i < klen; i++) u8[kstart + i] = (key as Uint8Array)[keyOff + i]!;
    u8.set(src, kstart + klen);
  }

  /** Starts moving the index to a fresh table sized for the live entries (this also drops tombstones). */
  private grow(): void {
    if (this.old !== null) this.migrate(this.old.capacity); // the previous growth must end first
    const capacity = capacityFor(this.count + 1);
    this.old = this.table;
    this.table = new HashTable(capacity);
    this.migrateCursor = 0;
    // Drain the old table before the new one can fill: that takes at least `headroom` inserts.
    const headroom = Math.max(1, Math.floor(capacity * MAX_LOAD) - this.count - 1);
    this.migrateBatch = 4 + Math.ceil(this.old.capacity / headroom);
    this.publish();
  }

  /** Moves up to `n` slots of the old table to the new one; retires the old table when empty. */
  private migrate(n: number): void {
    const old = this.old!;
    const t = this.table;
    const end = Math.min(old.capacity, this.migrateCursor + n);
    const from = old.slots;
    const fromHashes = old.hashes;
    const to = t.slots;
    for (let i = this.migrateCursor; i < end; i++) {
      const loc = from[i * 2 + 1]!;
      if (loc <= LOC_TOMBSTONE) continue;
      const h = fromHashes[i * 2]!;
      const j = t.freeSlotFor(h);
      if (to[j * 2 + 1] === LOC_TOMBSTONE) t.tombstones--;
      this.lock(h);
      to[j * 2] = h;
      to[j * 2 + 1] = loc;
      from[i * 2 + 1] = LOC_TOMBSTONE;
      this.unlock(h);
      t.live++;
      old.live--;
      old.tombstones++;
    }
    this.migrateCursor = end;
    if (end === old.capacity) {
      this.old = null;
      this.publish();
    }
  }

  private lock(h: number): void {
    if (this.shared) Atomics.add(this.control, stripeOf(h), 1);
  }

  private unlock(h: number): void {
    if (this.shared) Atomics.add(this.control, stripeOf(h), 1);
  }

  /** A table, segment or structure was added or retired: post the layout to readers, then bump the generation. */
  private publish(): void {
    this.generation++;
    if (this.ports.length > 0) {
      const layout = this.layout();
      for (const p of this.ports) p.postMessage(layout);
    }
    Atomics.store(this.control, CTRL_GENERATION, this.generation);
  }

  private layout(): SharedLayout {
    return {
      generation: this.generation,
      table: this.table.sab,
      capacity: this.table.capacity,
      oldTable: this.old === null ? null : this.old.sab,
      oldCapacity: this.old === null ? 0 : this.old.capacity,
      segments: this.arena.buffers.slice(),
      structures: this.codec === null ? [] : this.codec.snapshot(),
    };
  }

  private checkWritable(): void {
    if (this.closed) throw closedError('map');
    if (this.persistence !== null && this.persistence.failure !== undefined) {
      throw new OffHeapError(
        OffHeapErrorCodes.PERSIST_FAILED,
        'an earlier engine write failed; the map refuses writes',
        {
          cause: this.persistence.failure,
        },
      );
    }
  }

  /** Live records in index order (old table first while growing), as [segment, offset] pairs. */
  private *records(): IterableIterator<[number, number]> {
    for (const t of this.old === null ? [this.table] : [this.old, this.table]) {
      for (let i = 0; i < t.capacity; i++) {
        const loc = t.slots[i * 2 + 1]!;
        if (loc <= LOC_TOMBSTONE) continue;
        yield [locSegment(loc), locOffset(loc)];
      }
    }
  }

  private readKey(seg: number, off: number): K {
    const u8 = this.arena.u8[seg]!;
    const klen = this.arena.keyLength(seg, off);
    const start = off + RECORD_HEADER_BYTES;
    return (this.keysAreStrings ? u8.toString('utf8', start, start + klen) : copyOf(u8, start, start + klen)) as K;
  }

  private readValue(seg: number, off: number): V {
    return this.decodeValue(seg, off, off + RECORD_HEADER_BYTES + this.arena.keyLength(seg, off));
  }

  /** The value of the record at `off` in segment `seg`, whose value bytes start at `start`. */
  private decodeValue(seg: number, off: number, start: number): V {
    const arena = this.arena;
    if (this.structType !== null) return this.structType.decodeFrom(arena.u8[seg]!, arena.dv[seg]!, start) as V;
    return this.codec!.decode(
      arena.u8[seg]!,
      arena.dv[seg]!,
      arena.i32[seg]!,
      start,
      start + arena.valueLength(seg, off),
    ) as V;
  }
}

/**
 * The directory state, and the map image's content if the image is the engine's current state and intact, else why
 * not. A current image carries the meta keys' values: one engine read instead of four (cold table opens). Always
 * releases `pending`. Throws INCOMPATIBLE.
 */
async function directoryAndImage(
  engine: Engine,
  want: MapMeta,
  pending: PendingImage | string,
): Promise<{ state: DirectoryState; image: ImageContent | string }> {
  if (typeof pending === 'string') return { state: await prepareDirectory(engine, want), image: pending };
  let current: DirectoryState | string;
  try {
    current = directoryFromImage(engine, want, pending);
  } catch (err) {
    pending.drop();
    throw err;
  }
  if (typeof current !== 'string') return { state: current, image: pending.finish() };
  pending.drop();
  return { state: await prepareDirectory(engine, want), image: current };
}

/** Like Promise.all, but waits for every task before rejecting, so no task outlives the call (or the pool). */
async function settleAll(runs: Promise<unknown>[]): Promise<unknown[]> {
  const settled = await Promise.allSettled(runs);
  const out: unknown[] = [];
  for (const r of settled) {
    if (r.status === 'rejected') throw r.reason;
    out.push(r.value);
  }
  return out;
}

/**
 * A copy of `b[start, end)`. (`slice` would not do: the arena's and the engine scratch's views are Buffers, whose
 * `slice` is a view of the same memory, which the map reuses.) A small copy comes from Node's Buffer pool, which
 * costs far less than an ArrayBuffer of its own (and the external-memory GCs that many of them start).
 */
function copyOf(b: Buffer, start: number, end: number): Uint8Array {
  const out = Buffer.allocUnsafe(end - start);
  b.copy(out, 0, start, end); // no view of the source made on the way
  return out;
}

/** Smallest power-of-two capacity holding `n` entries at SIZING_LOAD. */
function capacityFor(n: number): number {
  let c = MIN_CAPACITY;
  while (c * SIZING_LOAD < n) c *= 2;
  return c;
}
