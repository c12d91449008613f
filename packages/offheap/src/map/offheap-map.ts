import type { EngineStats } from '@heapless/engine';
import type { FieldSpec } from '@heapless/struct';
import { closedError, invalidArgument } from '../errors.js';
import { type Arena, NO_EXPIRY } from '../memory/arena.js';
import type { ImageScheduleStats } from '../persist/image-schedule.js';
import { NS_USER_META } from '../persist/persistence.js';
import type { WorkerFunction } from '../shared/parallel-task.js';
import type { ScanCursor } from '../shared/record-cursor.js';
import type { SharedMapHandle } from '../shared/shared-handle.js';
import type { StructView } from '../struct-view.js';
import { type BatchResult, MapBatch } from './map-batch.js';
import { MapChanges } from './map-changes.js';
import { checkpointMap, type MapCheckpoint } from './map-checkpoint.js';
import type { MapCodec } from './map-codec.js';
import { counterDelta } from './map-counters.js';
import { MapExpiry } from './map-expiry.js';
import type { MapIndex } from './map-index.js';
import { MapMetadata, MemoryMetadata } from './map-meta.js';
import { closeParts, type MapParts, memoryParts, openParts } from './map-open.js';
import type {
  DeleteOptions,
  MapEntry,
  MapKey,
  MapOpenStats,
  OffHeapMapOpenOptions,
  OffHeapMapOptions,
  OffHeapMapStats,
  SetOptions,
} from './map-options.js';
import { MapRecords } from './map-records.js';
import { mapStats, openStats } from './map-stats.js';
import { ANY_VERSION, checkOf, expiresAtOf } from './map-store.js';
import { MapViews } from './map-views.js';
import { MapWriter } from './map-writer.js';
import { type RangeOptions, type RangePage, rangePage } from './ordered-range.js';

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
 * records, written through the store (map-store.ts) by the write core (map-writer.ts); struct views are hosted by
 * map-views.ts; sharing (map-sharing.ts) and the worker pool (map-parallel.ts) serve other threads; a persisted map
 * adds its persistence (persist/persistence.ts). This class is the API over them, and the one that drives close.
 */
export class OffHeapMap<K extends MapKey = string, V = unknown, F extends FieldSpec = FieldSpec> {
  /**
   * The map's named metadata (small byte values such as a schema id or a stream position, kept beside the records
   * and out of their key space): `meta.get(name)`, `meta.names()`, `meta.set(name, bytes)`; several names, or names
   * and records together, atomically through `batch()`. See map/map-meta.ts.
   */
  readonly meta: MapMetadata<BatchResult>;
  /** The parts the map is made of (map-open.ts); the ones every read and write uses are also fields of their own. */
  private readonly parts: MapParts<F>;
  private readonly codec: MapCodec<F>;
  private readonly arena: Arena;
  private readonly index: MapIndex;
  private readonly writer: MapWriter;
  private readonly views: MapViews;
  private readonly records: MapRecords<K, V, F>;
  /** The engine directory of a persisted map. */
  private readonly dir: string | null;
  private readonly expiry: MapExpiry;
  private closed = false;
  private changeFeed: MapChanges | undefined;

  /**
   * A memory-only map. Throws INVALID_ARGUMENT on bad options. (`parts` is the opener's: `OffHeapMap.open` passes
   * the parts of a persisted map.)
   */
  constructor(options: OffHeapMapOptions<F> = {}, parts: MapParts<F> = memoryParts(options)) {
    this.parts = parts;
    this.codec = parts.codec;
    this.arena = parts.arena;
    this.index = parts.index;
    const memoryMeta = new MemoryMetadata();
    this.writer = new MapWriter(parts, memoryMeta);
    this.views = new MapViews(parts.index, parts.arena, parts.store, parts.seqlock, this.writer);
    this.records = new MapRecords(
      parts.index,
      parts.arena,
      parts.codec,
      parts.keysAreStrings,
      this.writer,
      parts.store.now,
    );
    this.meta = new MapMetadata(
      parts.persistence,
      memoryMeta,
      () => this.batch(),
      () => {
        if (this.closed) throw closedError('map');
      },
      NS_USER_META,
    );
    parts.pending?.start();
    this.expiry = new MapExpiry(this.writer, parts.store);
    this.expiry.start();
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
   * memory-only map; one call in 1024 (map-writer.ts) resolves an event-loop turn later, so that a loop awaiting it
   * lets timers and I/O run. Rejects with PERSIST_FAILED if an engine write failed (the map then refuses writes).
   */
  durable(): Promise<void> {
    return this.writer.durable();
  }

  /** Like `durable()`, but forces an fdatasync of every write so far whatever the `sync` level. */
  flush(): Promise<void> {
    return this.parts.persistence === null ? Promise.resolve() : this.parts.persistence.flush();
  }

  /** Number of entries. Throws CLOSED after `close()`, as every read and write does. */
  get size(): number {
    this.whole();
    return this.index.count;
  }

  /** The decoded value for `key` (a new object each call), or undefined. Throws DECODE_FAILED, INVALID_ARGUMENT, CLOSED. */
  get(key: K): V | undefined {
    if (this.closed) throw closedError('map');
    return this.records.get(key);
  }

  /** True if `key` is present. */
  has(key: K): boolean {
    if (this.closed) throw closedError('map');
    return this.records.has(key);
  }

  /** A copy of the stored bytes of `key`'s value (msgpack or struct layout), or undefined. */
  getBytes(key: K): Uint8Array | undefined {
    if (this.closed) throw closedError('map');
    return this.records.getBytes(key);
  }

  /**
   * `key`'s value with its version and expiry (FORMAT.md §12, §13): `{ value, version, expiresAt }` (`expiresAt` in
   * ms since the epoch, 0 for a key without one), or undefined if `key` is absent or expired. Throws as `get`.
   */
  getEntry(key: K): MapEntry<V> | undefined {
    if (this.closed) throw closedError('map');
    return this.records.getEntry(key);
  }

  /**
   * Stores `value` under `key` (msgpack-encoded, or laid out as the map's struct) and returns the map. With
   * `options.ifVersion` the write is made only if `key` has that version, with `options.ifAbsent` only if it is
   * absent (or expired); else it throws VERSION_MISMATCH (a `VersionMismatchError` with the key's current version)
   * and writes nothing. The write's version is `getEntry(key).version` afterwards (`setEntry` returns it).
   * Throws ENCODE_FAILED / FIELD_OVERFLOW (value refused, map unchanged), KEY_TOO_LARGE, VALUE_TOO_LARGE,
   * INVALID_ARGUMENT (bad options), PERSIST_FAILED (an earlier engine write failed), CLOSED.
   */
  set(key: K, value: V, options?: SetOptions): this {
    if (options === undefined) this.writer.set(key, value, ANY_VERSION, NO_EXPIRY);
    else this.writer.set(key, value, checkOf(options), expiresAtOf(options, this.parts.store.now()));
    return this;
  }

  /** `set`, returning the version of the write. Same options and errors. */
  setEntry(key: K, value: V, options?: SetOptions): number {
    if (options === undefined) return this.writer.set(key, value, ANY_VERSION, NO_EXPIRY);
    return this.writer.set(key, value, checkOf(options), expiresAtOf(options, this.parts.store.now()));
  }

  /**
   * Makes `key` expire `ttl` milliseconds from now (a write of its value as it is: a new version); a `ttl` ≤ 0
   * deletes it. Returns false (nothing written) if `key` is absent or expired. Throws INVALID_ARGUMENT (a `ttl` that
   * is not a finite number, a bad key), PERSIST_FAILED, CLOSED.
   */
  expire(key: K, ttl: number): boolean {
    if (typeof ttl !== 'number' || !Number.isFinite(ttl))
      throw invalidArgument(`ttl must be a number of ms, got ${ttl}`);
    if (ttl <= 0) return this.writer.delete(key, ANY_VERSION);
    return this.writer.setExpiry(key, this.parts.store.now() + ttl, false);
  }

  /**
   * Removes `key`'s expiry (a write: a new version); false (nothing written) if `key` is absent, expired or has no
   * expiry. Throws as `expire`.
   */
  persist(key: K): boolean {
    return this.writer.setExpiry(key, NO_EXPIRY, true);
  }

  /**
   * The milliseconds left before `key` expires (rounded up), -1 if it has no expiry, -2 if it is absent or expired
   * (Redis's PTTL). Throws INVALID_ARGUMENT, CLOSED.
   */
  ttl(key: K): number {
    if (this.closed) throw closedError('map');
    const e = this.records.expiryOf(key);
    if (e === undefined) return -2;
    return e === NO_EXPIRY ? -1 : Math.ceil(e - this.parts.store.now());
  }

  /**
   * Removes now every key whose expiry has passed (what the map's timer does by itself in slices of about 1 ms every
   * 100 ms); returns how many entries of the expiry index it took (removed keys and stale entries). For tests and for
   * an owner that drives expiry itself. Throws CLOSED.
   */
  expireNow(): number {
    if (this.closed) throw closedError('map');
    return this.expiry.runNow();
  }

  /**
   * Adds `delta` (default 1; a safe integer or a bigint) to `key`'s value, a 64-bit signed integer (an absent or
   * expired key counts as 0), as one write that keeps the key's expiry; returns the new value — a number, or a
   * bigint beyond ±(2^53 − 1), as `get` then reads it too — and the write's version (FORMAT.md §14). Throws
   * NOT_AN_INTEGER (the value is not such an integer), COUNTER_OVERFLOW (the result would leave int64: it never
   * wraps) — nothing written then —, INVALID_ARGUMENT (a struct map, a bad delta or key), PERSIST_FAILED, CLOSED.
   */
  incr(key: K, delta: number | bigint = 1): { value: number | bigint; version: number } {
    return this.writer.incr(key, counterDelta(delta));
  }

  /**
   * Stores already-serialized value bytes as they are (no decode). For struct maps `bytes` must be exactly the
   * struct's size. Same options and errors as `set`.
   */
  setBytes(key: K, bytes: Uint8Array, options?: SetOptions): this {
    if (options === undefined) this.writer.setBytes(key, bytes, ANY_VERSION, NO_EXPIRY);
    else this.writer.setBytes(key, bytes, checkOf(options), expiresAtOf(options, this.parts.store.now()));
    return this;
  }

  /**
   * Removes `key`; true if it was present. With `options.ifVersion`, only if `key` has that version, else it throws
   * VERSION_MISMATCH and removes nothing. Throws INVALID_ARGUMENT (bad options), PERSIST_FAILED, CLOSED.
   */
  delete(key: K, options?: DeleteOptions): boolean {
    return this.writer.delete(key, options === undefined ? ANY_VERSION : checkOf(options));
  }

  /**
   * A new, empty batch of sets, deletes and metadata for this map (map/map-batch.ts): its `write()` applies them to
   * memory and, for a persisted map, to the engine as one atomic engine write — after a crash, all of the batch or
   * none of it — and resolves with the batch's engine `sequence` once durable.
   */
  batch(): MapBatch<K, V> {
    return new MapBatch<K, V>(this.codec, this.parts.keysAreStrings, this.writer, this.parts.store.now);
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
    return rangePage(
      options,
      this.parts.keysAreStrings,
      this.parts.persistence,
      this.index.tables(),
      this.arena,
      this.parts.store.now(),
    );
  }

  /** Removes every entry (one persisted delete per key); the metadata (`meta`) stays. */
  clear(): void {
    this.writer.checkWritable();
    for (const k of Array.from(this.keys())) this.delete(k);
  }

  /** Keys, in index order. */
  keys(): IterableIterator<K> {
    return this.records.keys();
  }

  /** Decoded values, in index order. */
  values(): IterableIterator<V> {
    return this.records.values();
  }

  /** [key, value] pairs, in index order. */
  entries(): IterableIterator<[K, V]> {
    return this.records.entries();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  /** Calls `fn(value, key, map)` for each entry, like Map#forEach. */
  forEach(fn: (value: V, key: K, map: this) => void): void {
    for (const [key, value] of this.records.entries()) fn(value, key, this);
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
    return type.createView(this.views);
  }

  /** Positions `view` on `key`'s record; false (view unchanged) if `key` is absent. No allocation. */
  locate(key: K, view: StructView<F>): boolean {
    if (this.closed) throw closedError('map');
    return this.views.locate(key, view);
  }

  /**
   * Memory accounting; see OffHeapMapStats. Of the memory as it is: right after a crash open, without the replayed
   * writes not in it yet (`openStats.replayPending`).
   */
  stats(): OffHeapMapStats {
    return mapStats(this.parts);
  }

  /** How the last open filled the map: from its image (and how many WAL writes it replayed onto it), or a scan. */
  get openStats(): MapOpenStats {
    return openStats(this.parts);
  }

  /** Counters of the images written while the map runs (see `imageEvery`), or undefined when it keeps none. */
  imageStats(): ImageScheduleStats | undefined {
    const images = this.parts.images;
    return images === null ? undefined : { ...images.stats };
  }

  /**
   * Writes an image of the map now (as `imageEvery` does by itself), so that an open after a crash starts from
   * here. Resolves to false when none was written (the map keeps no image, or it failed: a process warning says
   * why). Throws CLOSED.
   */
  async writeImage(): Promise<boolean> {
    if (this.closed) throw closedError('map');
    return this.parts.images === null ? false : this.parts.images.writeNow();
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
    if (this.parts.persistence === null || this.dir === null)
      throw invalidArgument('checkpoint() needs a persisted map');
    this.writer.settle();
    return checkpointMap(dir, this.dir, this.parts.persistence, this.parts.images);
  }

  /**
   * The change feed of a persisted map (its data writes with their engine sequence numbers, live and from the
   * retained WALs; map/map-changes.ts), or undefined for a memory-only map. Throws CLOSED.
   */
  get changes(): MapChanges | undefined {
    if (this.closed) throw closedError('map');
    if (this.parts.persistence === null) return undefined;
    this.changeFeed ??= new MapChanges(this.parts.persistence.engine);
    return this.changeFeed;
  }

  /** The persisting engine's stats (levels, flushes, compactions, stalls...), or undefined for a memory-only map. */
  engineStats(): EngineStats | undefined {
    return this.parts.persistence?.engineStats();
  }

  /** Index and arena state as text, for tests and debugging (lists every slot: small maps only). */
  dump(): string {
    this.writer.settle();
    return [
      `map entries=${this.index.count} layoutGeneration=${this.parts.sharing.layoutGeneration}`,
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
    // Readers read the memory itself: it must hold every write first.
    this.whole();
    return this.parts.sharing.share();
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
  async scan<R>(fn: WorkerFunction, partitions = this.parts.parallel.threads * 4): Promise<R[]> {
    this.whole();
    return (await this.parts.parallel.run('scan', fn, partitions)) as R[];
  }

  /**
   * The `[key, value]` entries for which the worker module's predicate `(value, key, fn.arg) => boolean` (the export
   * `fn.name`, default `default`) is true, evaluated on the worker threads, each value decoded in the worker and
   * structured-cloned back. Same module forms, concurrency rules and rejections as `scan`.
   */
  async filter(fn: WorkerFunction, partitions = this.parts.parallel.threads * 4): Promise<[K, V][]> {
    this.whole();
    return ((await this.parts.parallel.run('filter', fn, partitions)) as [K, V][][]).flat();
  }

  /** Decoded values of `keys` (undefined where absent), looked up on worker threads in parallel. */
  async getMany(keys: readonly K[]): Promise<(V | undefined)[]> {
    this.whole();
    return (await this.parts.parallel.getMany(keys)) as (V | undefined)[];
  }

  /**
   * `fn(cursor, arg)` on the calling thread, once per table of the index (one, or two while it grows), returning the
   * results in that order: the single-threaded counterpart of `scan`, taking the function itself. Throws CLOSED, or
   * what `fn` throws.
   */
  scanSync<R>(fn: (cursor: ScanCursor<K, V, F>, arg: unknown) => R, arg?: unknown): R[] {
    if (this.closed) throw closedError('map');
    return this.records.scan(fn, arg);
  }

  /**
   * Ends the map: marks the shared memory closed for readers and closes their ports, ends the worker pool, then,
   * for a persisted map, waits for pending engine writes, tags the engine's state, writes the map image and closes
   * the engine. Idempotent. The map's memory is released when no reader holds it any more.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.expiry.close();
    this.views.close();
    this.records.close();
    this.writer.close();
    await closeParts(this.parts, () => this.writer.finish());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Before what sees the whole map: CLOSED once closed, else every write a crash open still owes, into the map. */
  private whole(): void {
    if (this.closed) throw closedError('map');
    this.writer.settle();
  }
}
