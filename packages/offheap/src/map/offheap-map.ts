import type { EngineStats } from '@heapless/engine';
import type { FieldSpec } from '@heapless/struct';
import { closedError, invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { type Arena, LOC_TOMBSTONE, locOffset, locSegment, RECORD_HEADER_BYTES } from '../memory/arena.js';
import type { ImageSchedule, ImageScheduleStats } from '../persist/image-schedule.js';
import { type MapPersistence, NS_USER_META } from '../persist/persistence.js';
import { copyOf } from '../shared/copy-of.js';
import type { WorkerFunction } from '../shared/parallel-task.js';
import { RecordCursor, type ScanCursor } from '../shared/record-cursor.js';
import type { SharedMapHandle } from '../shared/shared-handle.js';
import type { StructView, StructViewBase, ViewHost } from '../struct-view.js';
import { viewNotPositioned } from '../struct-view.js';
import type { ImagePages } from './image-pages.js';
import { type BatchResult, type BatchWriteOptions, MapBatch } from './map-batch.js';
import { MapChanges } from './map-changes.js';
import { checkpointMap, type MapCheckpoint } from './map-checkpoint.js';
import type { MapCodec } from './map-codec.js';
import type { MapIndex } from './map-index.js';
import { MapMetadata, MemoryMetadata } from './map-meta.js';
import { type MapOrigin, type MapParts, memoryParts, openParts, writeMapImage } from './map-open.js';
import type { MapKey, MapOpenStats, OffHeapMapOpenOptions, OffHeapMapOptions, OffHeapMapStats } from './map-options.js';
import type { MapParallel } from './map-parallel.js';
import type { MapSharing } from './map-sharing.js';
import type { MapStore } from './map-store.js';
import { type RangeOptions, type RangePage, rangePage } from './ordered-range.js';
import type { PendingSuffix } from './pending-suffix.js';
import type { Seqlock } from './seqlock.js';

/**
 * How many `durable()` calls in a row may resolve without an event-loop turn. One turn (a setImmediate, about a
 * microsecond) in this many calls costs nothing measurable beside a write(2) per call, and lets timers and I/O run
 * within a millisecond or so of a loop's work.
 */
const DURABLE_YIELD_EVERY = 1024;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** `reclaims` of a closed map: below any count (0 up) and the unpositioned mark (-1) a view can hold. */
const CLOSED_RECLAIMS = -2;

/**
 * A Map-like store whose keys and values live in SharedArrayBuffers, not on the JS heap.
 *
 * Keys are strings (stored as their UTF-8 bytes) or Uint8Arrays. A string key must be well-formed UTF-16: every
 * method that takes a key throws INVALID_ARGUMENT for one with a lone surrogate, which has no UTF-8 form of its own.
 *
 * All reads and writes are synchronous and immediately visible. Values are msgpack (objects written against shared
 * structures) by default, or a fixed `struct` layout read and written in place through views. A map from
 * `OffHeapMap.open({ dir })` also writes every mutation to `@heapless/engine`; see `durable()` and `flush()`.
 *
 * Ownership: the creating thread owns the map and is the only writer; other threads read through `share()` /
 * `attach()`. Call `close()` when done: it ends persistence, the worker pool and every reader's access.
 *
 * Iteration: deleting while iterating is safe (like Map). Inserting may grow the index; an iteration running
 * across growth can yield a key twice or miss it, so collect keys first if you insert while iterating.
 *
 * The map is an assembly of parts (map-open.ts puts them together): the index (map-index.ts) and the arena hold the
 * records, written through the store (map-store.ts); sharing (map-sharing.ts) and the worker pool (map-parallel.ts)
 * serve other threads; a persisted map adds its persistence (persist/persistence.ts). This class is the API over
 * them, the host of struct views, and the one that drives close.
 */
export class OffHeapMap<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec> implements ViewHost {
  /** Blocks reclaimed so far (ViewHost): the store's count, copied after every write that can free a block. */
  reclaims = 0;
  /**
   * The map's named metadata (small byte values such as a schema id or a stream position, kept beside the records
   * and out of their key space): `meta.get(name)`, `meta.names()`, `meta.set(name, bytes)`; several names, or names
   * and records together, atomically through `batch()`. See map/map-meta.ts.
   */
  readonly meta: MapMetadata<BatchResult>;
  private readonly keysAreStrings: boolean;
  private readonly codec: MapCodec<F>;
  private readonly arena: Arena;
  private readonly index: MapIndex;
  private readonly store: MapStore;
  private readonly sharing: MapSharing;
  private readonly seqlock: Seqlock;
  private readonly parallel: MapParallel;
  private readonly persistence: MapPersistence | null;
  private readonly origin: MapOrigin;
  private readonly memoryMeta: MemoryMetadata;
  private readonly images: ImageSchedule | null;
  /** The WAL writes a crash open replays after it returns (pending-suffix.ts), until all are in; else null. */
  private pending: PendingSuffix | null;
  /** The same, kept for `openStats` once done. */
  private readonly suffix: PendingSuffix | null;
  /** A mapped image's pages, copied in bulk before large batches (image-pages.ts), else null. */
  private readonly imagePages: ImagePages | null;
  /** The engine directory of a persisted map. */
  private readonly dir: string | null;
  private closed = false;
  /** Calls of `durable()` since one last waited for the next event-loop turn. */
  private durableCalls = 0;
  private changeFeed: MapChanges | undefined;
  /** msgpackr structures grew and the engine has not been given them yet (it gets them with the next value). */
  private unsavedStructures = false;

  /**
   * A memory-only map. Throws INVALID_ARGUMENT on bad options. (`parts` is the opener's: `OffHeapMap.open` passes
   * the parts of a persisted map.)
   */
  constructor(options: OffHeapMapOptions<F> = {}, parts: MapParts<F> = memoryParts(options)) {
    this.keysAreStrings = parts.keysAreStrings;
    this.codec = parts.codec;
    this.arena = parts.arena;
    this.index = parts.index;
    this.store = parts.store;
    this.sharing = parts.sharing;
    this.seqlock = parts.seqlock;
    this.parallel = parts.parallel;
    this.persistence = parts.persistence;
    this.origin = parts.origin;
    this.memoryMeta = new MemoryMetadata();
    this.meta = new MapMetadata(
      parts.persistence,
      this.memoryMeta,
      () => this.batch(),
      () => {
        if (this.closed) throw closedError('map');
      },
      NS_USER_META,
    );
    this.images = parts.images;
    this.pending = parts.pending;
    this.suffix = parts.pending;
    this.imagePages = parts.imagePages;
    this.pending?.start();
    this.dir = (options as Partial<OffHeapMapOpenOptions<F>>).dir ?? null;
  }

  /**
   * Opens (or creates) a persisted map in `options.dir`: opens the engine, checks the directory holds a map of the
   * same key kind and codec, and takes the map's memory from its image if that is current, else rebuilds the index
   * and arena with one sequential scan of the engine. Every later mutation is written to the engine as it happens.
   * The caller must `close()` the map (which closes the engine). Rejects with INCOMPATIBLE (directory holds another
   * kind of map), the engine's errors (LOCKED, IO, CorruptionError), or INVALID_ARGUMENT (bad options).
   */
  static async open<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec>(
    options: OffHeapMapOpenOptions<F>,
  ): Promise<OffHeapMap<K, V, F>> {
    return new OffHeapMap<K, V, F>(options, await openParts(options));
  }

  /**
   * Resolves when every mutation made so far is durable at the map's `sync` level (see `open`); at once for a
   * memory-only map; one call in DURABLE_YIELD_EVERY resolves an event-loop turn later, so that a loop awaiting it
   * lets timers and I/O run. Rejects with PERSIST_FAILED if an engine write failed (the map then refuses writes).
   */
  durable(): Promise<void> {
    const done = this.persistence === null ? Promise.resolve() : this.persistence.durable();
    // Writes that need no fdatasync are durable once their write(2) returned, which a later microtask reports, and a
    // memory-only map has nothing to wait for: a loop awaiting durable() would never leave the microtask queue, and
    // timers and I/O would wait for the whole loop. One call in DURABLE_YIELD_EVERY also waits an event-loop turn.
    if (++this.durableCalls < DURABLE_YIELD_EVERY) return done;
    this.durableCalls = 0;
    return done.then(nextTurn);
  }

  /** Like `durable()`, but forces an fdatasync of every write so far whatever the `sync` level. */
  flush(): Promise<void> {
    return this.persistence === null ? Promise.resolve() : this.persistence.flush();
  }

  /** Number of entries. Throws CLOSED after `close()`, as every read and write does. */
  get size(): number {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
    return this.index.count;
  }

  /** The decoded value for `key` (a new object each call), or undefined. Throws DECODE_FAILED, INVALID_ARGUMENT, CLOSED. */
  get(key: K): V | undefined {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.owe(key);
    const index = this.index;
    const slot = index.find(key);
    if (slot < 0) return undefined;
    const loc = index.foundLocation(slot);
    const seg = locSegment(loc);
    const off = locOffset(loc);
    return this.codec.decode(
      this.arena,
      seg,
      off + RECORD_HEADER_BYTES + index.keyLength,
      this.arena.valueLength(seg, off),
    ) as V;
  }

  /** True if `key` is present. */
  has(key: K): boolean {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.owe(key);
    return this.index.find(key) >= 0;
  }

  /** A copy of the stored bytes of `key`'s value (msgpack or struct layout), or undefined. */
  getBytes(key: K): Uint8Array | undefined {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.owe(key);
    const slot = this.index.find(key);
    if (slot < 0) return undefined;
    const loc = this.index.foundLocation(slot);
    const arena = this.arena;
    const start = locOffset(loc) + RECORD_HEADER_BYTES + this.index.keyLength;
    return copyOf(arena.u8[locSegment(loc)]!, start, start + arena.valueLength(locSegment(loc), locOffset(loc)));
  }

  /**
   * Stores `value` under `key` (msgpack-encoded, or laid out as the map's struct) and returns the map.
   * Throws ENCODE_FAILED / FIELD_OVERFLOW (value refused, map unchanged), KEY_TOO_LARGE, VALUE_TOO_LARGE,
   * PERSIST_FAILED (an earlier engine write failed), CLOSED.
   */
  set(key: K, value: V): this {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    const bytes = this.codec.encode(value);
    if (this.codec.takeGrown()) {
      // Readers learn the new structures before any value using them can be seen; the engine gets them with it.
      this.sharing.publish();
      this.unsavedStructures = true;
    }
    const loc = this.store.put(key, bytes, bytes.length);
    this.reclaims = this.store.reclaims;
    if (this.persistence !== null) this.persist(loc);
    return this;
  }

  /**
   * Stores already-serialized value bytes as they are (no decode). For struct maps `bytes` must be exactly the
   * struct's size. Same errors as `set`.
   */
  setBytes(key: K, bytes: Uint8Array): this {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    this.codec.checkBytes(bytes);
    const loc = this.store.put(key, bytes, bytes.length);
    this.reclaims = this.store.reclaims;
    if (this.persistence !== null) this.persist(loc);
    return this;
  }

  /** Removes `key`; true if it was present. Throws PERSIST_FAILED, CLOSED. */
  delete(key: K): boolean {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    const slot = this.index.find(key);
    if (slot < 0) return false;
    // The engine copies the key before returning, but the block is freed first: copy it out before.
    const keyBytes = this.persistence === null ? null : this.store.keyOf(slot);
    this.store.remove(slot);
    this.reclaims = this.store.reclaims;
    if (keyBytes !== null) this.persistence!.del(keyBytes);
    return true;
  }

  /**
   * A new, empty batch of sets, deletes and metadata for this map (map/map-batch.ts): its `write()` applies them to
   * memory and, for a persisted map, to the engine as one atomic engine write — after a crash, all of the batch or
   * none of it — and resolves with the batch's engine `sequence` once durable.
   */
  batch(): MapBatch<K, V> {
    return new MapBatch<K, V>(this.codec, this.keysAreStrings, this.commitBatch);
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
    // A crash open's pending writes need not go in: only a persisted map has them, and its pages come from the engine.
    return rangePage(options, this.keysAreStrings, this.persistence, this.index.tables(), this.arena);
  }

  /** Removes every entry (one persisted delete per key); the metadata (`meta`) stays. */
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
    const type = this.codec.structType;
    if (type === null) throw invalidArgument('view() needs a map created with { struct }');
    return type.createView(this);
  }

  /** Positions `view` on `key`'s record; false (view unchanged) if `key` is absent. No allocation. */
  locate(key: K, view: StructView<F>): boolean {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.owe(key);
    const index = this.index;
    const slot = index.find(key);
    if (slot < 0) return false;
    const loc = index.foundLocation(slot);
    const seg = locSegment(loc);
    const start = locOffset(loc) + RECORD_HEADER_BYTES + index.keyLength;
    const arena = this.arena;
    (view as StructViewBase<F>)._position(
      arena.u8[seg]!,
      arena.dv[seg]!,
      start,
      this.reclaims,
      key,
      loc,
      index.keyHash,
    );
    return true;
  }

  /** ViewHost: re-finds a view's key after space was reclaimed. */
  revalidate<G extends FieldSpec>(view: StructViewBase<G>): void {
    if (view._reclaims === -1) throw new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, 'view is not positioned');
    if (this.closed) throw closedError('map');
    if (!this.locate(view._key as K, view as unknown as StructView<F>)) throw viewNotPositioned(view._key);
  }

  /** ViewHost: before an in-place field write. */
  beginWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.checkWritable();
    this.seqlock.lock(view._hash);
  }

  /** ViewHost: after an in-place field write — publish and persist the record. */
  endWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.seqlock.unlock(view._hash);
    if (this.persistence !== null) this.persist(view._loc);
  }

  /**
   * Memory accounting; see OffHeapMapStats. Of the memory as it is: right after a crash open, without the replayed
   * writes not in it yet (`openStats.replayPending`).
   */
  stats(): OffHeapMapStats {
    const a = this.arena;
    const index = this.index;
    const t = index.table;
    return {
      entries: index.count,
      indexBytes: index.bytes,
      indexCapacity: t.capacity,
      loadFactor: (t.live + t.tombstones) / t.capacity,
      tombstones: index.tombstones,
      growing: index.old !== null,
      arenaBytes: a.reservedBytes,
      arenaUsedBytes: a.usedBytes,
      liveBytes: a.liveBytes,
      payloadBytes: this.store.payload,
      garbageBytes: a.freeBytes + a.wasteBytes,
      segments: a.buffers.length,
      loadedFrom: this.origin.loadedFrom,
      imageLoader: this.origin.imageLoader,
      imageRejected: this.origin.imageRejected,
    };
  }

  /** How the last open filled the map: from its image (and how many WAL writes it replayed onto it), or a scan. */
  get openStats(): MapOpenStats {
    const o = this.origin;
    const s = this.suffix;
    return {
      source: o.loadedFrom,
      replayed: o.replayed,
      replayPending: s === null ? 0 : s.remaining,
      replayPages: s === null ? 0 : s.pages,
      imagePagesCopied: this.imagePages === null ? 0 : this.imagePages.pages,
      imageCheck: o.imageCheck,
      imageRejected: o.imageRejected,
    };
  }

  /** Counters of the images written while the map runs (see `imageEvery`), or undefined when it keeps none. */
  imageStats(): ImageScheduleStats | undefined {
    return this.images === null ? undefined : { ...this.images.stats };
  }

  /**
   * Writes an image of the map now (as `imageEvery` does by itself), so that an open after a crash starts from
   * here. Resolves to false when none was written (the map keeps no image, or it failed: a process warning says
   * why). Throws CLOSED.
   */
  async writeImage(): Promise<boolean> {
    if (this.closed) throw closedError('map');
    return this.images === null ? false : this.images.writeNow();
  }

  /**
   * Writes a consistent copy of this persisted map into `dir` (new or empty, outside the map's directory) while
   * writes go on: the engine's checkpoint and the map's newest image, so that `OffHeapMap.open({ dir })` of the copy
   * loads the image and replays the few writes after it instead of scanning (map/map-checkpoint.ts). The copy holds
   * every write acknowledged before the call; the writer pauses for the engine checkpoint's synchronous part only.
   * Rejects with INVALID_ARGUMENT (memory-only map, bad or non-empty `dir`, `dir` inside the map's), CLOSED, or the
   * engine's IO.
   */
  async checkpoint(dir: string): Promise<MapCheckpoint> {
    if (this.closed) throw closedError('map');
    if (this.persistence === null || this.dir === null) throw invalidArgument('checkpoint() needs a persisted map');
    if (this.pending !== null) this.settle();
    return checkpointMap(dir, this.dir, this.persistence, this.images);
  }

  /**
   * The change feed of a persisted map (its data writes with their engine sequence numbers, live and from the
   * retained WALs; map/map-changes.ts), or undefined for a memory-only map. Throws CLOSED.
   */
  get changes(): MapChanges | undefined {
    if (this.closed) throw closedError('map');
    if (this.persistence === null) return undefined;
    this.changeFeed ??= new MapChanges(this.persistence.engine);
    return this.changeFeed;
  }

  /** The persisting engine's stats (levels, flushes, compactions, stalls...), or undefined for a memory-only map. */
  engineStats(): EngineStats | undefined {
    return this.persistence?.engineStats();
  }

  /** Index and arena state as text, for tests and debugging (lists every slot: small maps only). */
  dump(): string {
    if (this.pending !== null) this.settle();
    return [
      `map entries=${this.index.count} layoutGeneration=${this.sharing.layoutGeneration}`,
      this.index.dump(),
      this.arena.dump(),
    ].join('\n');
  }

  /**
   * A handle another thread can `attach()` to for reading this map's memory (see shared/offheap-reader.ts for the
   * consistency model). Post it with its port transferred: `worker.postMessage(h, [h.port])`. The reader's
   * `close()` releases it; the map's `close()` ends every reader's access.
   */
  share(): SharedMapHandle {
    if (this.closed) throw closedError('map');
    // Readers read the memory itself: it must hold every write first.
    if (this.pending !== null) this.settle();
    return this.sharing.share();
  }

  /**
   * Runs the export `fn.name` (default `default`) of the worker module `fn.module` (an absolute path, or a `file:` or
   * `data:` URL) as `(cursor, fn.arg) => R` once per partition of the index (about `partitions` slices), on the
   * `threads` worker threads in parallel, and resolves to the return values in partition order, each
   * structured-cloned (combine them yourself). The function reads its slice through a ScanCursor: `while
   * (cursor.next())`, then `cursor.key`, `.value` (decoded), `.bytes` (valid until the next `next()`) or, for a
   * struct map, `.view` (read-only). Each record present and unchanged during the whole scan is seen once; writes
   * made meanwhile may or may not be. Growth of the index is paused while scans run (unless the new table fills,
   * then a key moved during the scan may be seen twice or missed). Rejects with WORKER_FAILED (the worker's error as
   * cause; an OffHeapError keeps its code), INVALID_ARGUMENT (no function of that name) or CLOSED, once every
   * partition has settled.
   */
  async scan<R>(fn: WorkerFunction, partitions = this.parallel.threads * 4): Promise<R[]> {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
    return (await this.parallel.run('scan', fn, partitions)) as R[];
  }

  /**
   * The `[key, value]` entries for which the worker module's predicate `(value, key, fn.arg) => boolean` (the export
   * `fn.name`, default `default`) is true, evaluated on the worker threads, each value decoded in the worker and
   * structured-cloned back. Same module forms, concurrency rules and rejections as `scan`.
   */
  async filter(fn: WorkerFunction, partitions = this.parallel.threads * 4): Promise<[K, V][]> {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
    return ((await this.parallel.run('filter', fn, partitions)) as [K, V][][]).flat();
  }

  /** Decoded values of `keys` (undefined where absent), looked up on worker threads in parallel. */
  async getMany(keys: readonly K[]): Promise<(V | undefined)[]> {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
    return (await this.parallel.getMany(keys)) as (V | undefined)[];
  }

  /**
   * `fn(cursor, arg)` on the calling thread, once per table of the index (one, or two while it grows), returning the
   * results in that order: the single-threaded counterpart of `scan`, taking the function itself. Throws CLOSED, or
   * what `fn` throws.
   */
  scanSync<R>(fn: (cursor: ScanCursor<K, V, F>, arg: unknown) => R, arg?: unknown): R[] {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
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
      );
      out.push(fn(cursor, arg));
    }
    return out;
  }

  /**
   * Ends the map: marks the shared memory closed for readers and closes their ports, ends the worker pool, then,
   * for a persisted map, waits for pending engine writes, tags the engine's state, writes the map image and closes
   * the engine. Idempotent. The map's memory is released when no reader holds it any more.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Views positioned before close see a count no view holds, and go to `revalidate`, which throws CLOSED: no
    // check on the field accessors' path.
    this.reclaims = CLOSED_RECLAIMS;
    this.pending?.stop();
    this.sharing.close();
    await this.parallel.close();
    const p = this.persistence;
    if (p === null) return;
    await this.images?.close();
    await p.settle();
    let folded = true;
    try {
      this.pending?.settle();
    } catch (err) {
      // The engine has every write: the next open replays them again onto the older image.
      folded = false;
      process.emitWarning(`map image not written: ${String(err)}`, { code: 'HEAPLESS_IMAGE_WRITE_FAILED' });
    }
    const tag = folded ? await p.tag(this.index.count) : null;
    if (tag !== null) writeMapImage(tag, this.index, this.arena, this.store, this.codec);
    await p.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- internals --------------------------------------------------------------------------------------------

  /** Applies a batch's operations (after the checks of a write), with the structure table if the engine lacks it. */
  private readonly commitBatch = (
    batch: MapBatch<K, V>,
    options: BatchWriteOptions | undefined,
  ): Promise<BatchResult> => {
    this.checkWritable();
    if (this.codec.takeGrown()) {
      // The batch's values were encoded as it was filled: readers learn their structures before any can be seen.
      this.sharing.publish();
      this.unsavedStructures = true;
    }
    let structures = null;
    if (this.persistence !== null && this.unsavedStructures) {
      structures = this.codec.structures();
      this.unsavedStructures = false;
    }
    const target = {
      index: this.index,
      store: this.store,
      persistence: this.persistence,
      memoryMeta: this.memoryMeta,
      pending: this.pending,
      pages: this.imagePages,
    };
    const result = batch.apply(target, structures, options?.sync === true);
    if (this.pending?.done === true) this.pending = null;
    this.reclaims = this.store.reclaims;
    return result;
  };

  /** Writes the record at `loc` to the engine, with the structure table if it grew since the engine last got it. */
  private persist(loc: number): void {
    const arena = this.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = arena.u8[seg]!;
    const kstart = off + RECORD_HEADER_BYTES;
    const vstart = kstart + arena.keyLength(seg, off);
    let structures = null;
    if (this.unsavedStructures) {
      structures = this.codec.structures();
      this.unsavedStructures = false;
    }
    this.persistence!.put(
      u8.subarray(kstart, vstart),
      u8.subarray(vstart, vstart + arena.valueLength(seg, off)),
      structures,
    );
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

  /**
   * Before a read or write of `key`: its writes still owed by a crash open, into the map. A key of the wrong kind is
   * left to the lookup after, which throws INVALID_ARGUMENT.
   */
  private owe(key: MapKey): void {
    const p = this.pending!;
    if (typeof key === 'string') {
      if (this.keysAreStrings) p.foldString(key, this.index.hasher);
    } else if (key instanceof Uint8Array && !this.keysAreStrings) p.foldBytes(key, 0, key.length);
    if (p.done) this.pending = null;
  }

  /** Before what sees the whole map: every write still owed by a crash open, into the map. */
  private settle(): void {
    this.pending!.settle();
    this.pending = null;
  }

  /** Live records in index order (old table first while growing), as [segment, offset] pairs. */
  private *records(): IterableIterator<[number, number]> {
    if (this.closed) throw closedError('map');
    if (this.pending !== null) this.settle();
    for (const t of this.index.tables()) {
      for (let i = 0; i < t.capacity; i++) {
        const loc = t.slots[i * 2 + 1]!;
        if (loc <= LOC_TOMBSTONE) continue;
        // An iteration started before close() ends with it, as every read does.
        if (this.closed) throw closedError('map');
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
    const a = this.arena;
    return this.codec.decode(a, seg, off + RECORD_HEADER_BYTES + a.keyLength(seg, off), a.valueLength(seg, off)) as V;
  }
}
