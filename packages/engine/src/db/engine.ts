/**
 * The engine: a LevelDB-style LSM tree. See README.md for the tour and FORMAT.md for every file layout.
 *
 * An Engine is assembled from parts (engine-parts.ts), each given what it needs whole when the engine is made (Pebble
 * splits its db.go the same way): open.ts opens and recovers the directory; write-path.ts applies writes (WAL group
 * commit, memtable, rotation); read-path.ts answers lookups and makes iterators; background.ts flushes and compacts
 * on the worker threads; write-gate.ts stalls writes while that work lags and refuses them after it failed;
 * obsolete-files.ts deletes what no version needs. The engine holds the public API and drives close.
 *
 * Threading: everything runs on the caller's event loop except table writing (flushes and compactions), which runs
 * in a piscina pool of worker threads owned by the engine. Writes are applied to the memtable synchronously, in call
 * order, before their promise is returned; reads are synchronous inside (the async forms resolve at once).
 *
 * Ownership: `Engine.open` returns an engine that holds the directory's LOCK, file descriptors (WAL, manifest, tables)
 * and, once writes filled a quarter of a memtable, worker threads. `close()` releases all of them; iterators and
 * snapshots the caller still holds are closed and released by it.
 */

import type { BackgroundWork } from '../background/background.js';
import type { ObsoleteFiles } from '../background/obsolete-files.js';
import type { PeriodicCompaction } from '../background/periodic-compaction.js';
import type { ReaderRegistry } from '../background/reader-pins.js';
import type { Snapshot, SnapshotList } from '../background/snapshot.js';
import { closedError, invalidArgument } from '../base/errors.js';
import type { EngineOptions } from '../base/options.js';
import type { JobPool } from '../compaction/job-pool.js';
import type { LiveView } from '../follower/live-view.js';
import type { LockFile } from '../open/lock-file.js';
import { openDatabase } from '../open/open.js';
import type { OpenedDatabase } from '../open/opened-database.js';
import { readOnlyError } from '../open/read-only.js';
import { type ApproximateSizeOptions, memtableBytesInRange, tableBytesInRange } from '../read/approximate-size.js';
import type { EngineIterator, IteratorOptions } from '../read/engine-iterator.js';
import { type ReadOptions, type ReadPath, toKey } from '../read/read-path.js';
import type { BlockCache } from '../table/block-cache.js';
import type { TableCache } from '../table/table-cache.js';
import { createCheckpoint } from '../tools/checkpoint.js';
import type { VersionSet } from '../version/version-set.js';
import type { CommitFollower } from '../write/commit-feed.js';
import type { MemtableSet } from '../write/memtables.js';
import {
  readUpdatesSince,
  recoveredUpdatesSince,
  type UpdateBatch,
  type UpdatesSince,
} from '../write/updates-since.js';
import type { WalRetention } from '../write/wal-retention.js';
import { type Bytes, WriteBatch } from '../write/write-batch.js';
import type { WriteGate } from '../write/write-gate.js';
import type { WriteOperation, WritePath } from '../write/write-path.js';
import { assembleParts, releaseTables } from './engine-parts.js';
import {
  type EngineStats,
  engineStats,
  type FigureSources,
  propertyValue,
  type TableInfo,
  tablesOf,
} from './properties.js';

export type { ReadOptions } from '../read/read-path.js';
export type { WriteOperation } from '../write/write-path.js';
export type { EngineStats } from './properties.js';

/** Per-write options. */
export interface WriteOptions {
  /**
   * Resolve only once the write is on disk (fdatasync of the WAL) rather than in the OS (write(2) of the WAL).
   * Default: the engine's `sync` option.
   */
  sync?: boolean;
}

/** Capacity of the memtable that takes over when close freezes the live one: it stays empty. */
const CLOSING_MEMTABLE_CAPACITY = 4096;

export class Engine {
  /** The database directory. */
  readonly location: string;
  private readonly lock: LockFile | undefined;
  /** A read-only engine's or a follower's view of the directory (undefined for a writer). */
  private readonly view: LiveView | undefined;
  private readonly follower: boolean;
  private readonly versions: VersionSet;
  private readonly blockCache: BlockCache;
  private readonly tableCache: TableCache;
  private readonly snapshots: SnapshotList;
  private readonly memtables: MemtableSet;
  private readonly gate: WriteGate;
  private readonly obsolete: ObsoleteFiles;
  /** The writer's side of the readers' pins (reader-pins.ts); undefined for a read-only engine. */
  private readonly readers: ReaderRegistry | undefined;
  private readonly retention: WalRetention;
  private readonly jobs: JobPool;
  private readonly background: BackgroundWork;
  private readonly writes: WritePath;
  private readonly reads: ReadPath;
  private readonly periodic: PeriodicCompaction;
  /** The parts `stats()` reads. */
  private readonly figures: FigureSources;
  private closing: Promise<void> | undefined;
  /**
   * The batches the open replayed after the `retainWalAfter` pin (open.ts), until the first `updatesSince` (or a
   * move of the pin) lets go of them; undefined after, or when there were none.
   */
  private recovered: { batches: UpdateBatch[]; last: number } | undefined;

  /** Assembles the engine from what `openDatabase` recovered, and starts its background work. */
  private constructor(db: OpenedDatabase) {
    const { dir, versions } = db;
    const parts = assembleParts(db, () => this.compactRange());
    this.location = dir;
    this.lock = db.lock;
    this.view = db.view;
    this.follower = db.options.follower;
    this.versions = versions;
    this.readers = db.readers;
    this.recovered = db.recovered.length > 0 ? { batches: db.recovered, last: versions.lastSequence } : undefined;
    this.blockCache = parts.blockCache;
    this.tableCache = parts.tableCache;
    this.snapshots = parts.snapshots;
    this.memtables = parts.memtables;
    this.gate = parts.gate;
    this.obsolete = parts.obsolete;
    this.retention = parts.retention;
    this.jobs = parts.jobs;
    this.background = parts.background;
    this.writes = parts.writes;
    this.reads = parts.reads;
    this.periodic = parts.periodic;
    this.figures = parts;
    if (db.view) {
      this.writes.refuse(() => readOnlyError(dir, 'a write'));
      return;
    }
    // The manifest open wrote (or reused) is durable: what it no longer needs can go. Compaction left to do starts
    // with the first write (write-path.ts), so that an open that only reads starts no worker.
    this.obsolete.collect(db.listing);
    if (this.memtables.pendingRecords > 0) this.memtables.insertPendingSoon();
  }

  /**
   * Opens (creating by default) the database in `dir`: replays the WAL into tables, writes a fresh manifest and
   * starts a new WAL; after a clean close open writes nothing (the WAL is replayed into the live memtable, and it
   * and the manifest are appended to). Tables are opened at their first read. Resolves to an engine the caller must
   * `close()`.
   *
   * Throws (rejects with) EngineError: LOCKED if another open holds `dir`; NOT_FOUND when there is no database and
   * `createIfMissing` is false; EXISTS when there is one and `errorIfExists` is true; INVALID_ARGUMENT for bad options;
   * UNSUPPORTED for a `compression` this runtime cannot write (zstd before Node 22.15, a codec binding that does not
   * load); IO; CorruptionError when the manifest, a WAL record in the middle of a log, or a table read during recovery is bad,
   * or when the manifest does not match the files in `dir`; a failed open leaves every file in `dir` as it was.
   */
  static async open(dir: string, options?: EngineOptions): Promise<Engine> {
    const db = openDatabase(dir, options);
    try {
      return new Engine(db);
    } catch (err) {
      db.log?.close();
      db.versions.close();
      db.lock?.release();
      db.view?.close();
      throw err;
    }
  }

  // ---------------------------------------------------------------- writes

  /**
   * Stores `value` under `key`. Applied to the memtable before this returns (a read right after sees it). Resolves
   * when durable to the level asked: with `sync`, after an fdatasync of the WAL that covers it (survives a power
   * loss); without, after the write(2) that handed it to the OS (survives `kill -9`; a power loss may lose a suffix
   * of such writes); without a WAL, at once. Rejects with EngineError INVALID_ARGUMENT (bad key or value; nothing
   * written), CLOSED, or IO (the WAL write failed, or a background failure; the engine then refuses writes).
   */
  put(key: Bytes, value: Bytes, options?: WriteOptions): Promise<void> {
    return this.writes.put(key, value, options?.sync);
  }

  /** Deletes `key` (no error if absent). Ordering, durability and errors as `put`. */
  delete(key: Bytes, options?: WriteOptions): Promise<void> {
    return this.writes.delete(key, options?.sync);
  }

  /**
   * Applies puts and deletes atomically (one WAL record, consecutive sequence numbers): a crash keeps all or none.
   * Ordering, durability and errors as `put`; a bad operation rejects the whole batch before anything is written.
   */
  write(ops: readonly WriteOperation[] | WriteBatch, options?: WriteOptions): Promise<void> {
    return this.writes.write(ops, options?.sync);
  }

  /** A chained batch: `.put()`, `.del()`, `.clear()`, then `.write(options)` (atomic, as `write`). */
  batch(): WriteBatch {
    return new WriteBatch((b, sync) => this.writes.apply(b, sync), 4096);
  }

  // ---------------------------------------------------------------- reads

  /**
   * The value of `key` (a copy the caller owns), or undefined. Synchronous. Throws EngineError CLOSED or
   * INVALID_ARGUMENT (bad key, released snapshot), or CorruptionError from a table.
   */
  getSync(key: Bytes, options?: ReadOptions): Uint8Array | undefined {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return this.reads.get(key, options);
  }

  /** `getSync`, as a promise (already settled: the read is synchronous). */
  get(key: Bytes, options?: ReadOptions): Promise<Uint8Array | undefined> {
    try {
      return Promise.resolve(this.getSync(key, options));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The values of `keys`, in the order asked, all as of one sequence number. Looks them up in key order (better
   * cache locality). Rejects as `getSync` throws.
   */
  getMany(keys: readonly Bytes[], options?: ReadOptions): Promise<(Uint8Array | undefined)[]> {
    try {
      if (this.closing) throw closedError(`engine ${this.location}`);
      return Promise.resolve(this.reads.getMany(keys, options));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** A snapshot of the current state; the caller must `release()` it (close releases any left). Throws CLOSED. */
  snapshot(): Snapshot {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return this.snapshots.create(this.versions.lastSequence);
  }

  /**
   * An iterator over a consistent view (as of now, or of `options.snapshot`), within the bounds, in key order or
   * reverse. The caller must close it (or finish a `for await`); the engine's close closes any left. Throws
   * EngineError CLOSED or INVALID_ARGUMENT.
   */
  iterator(options: IteratorOptions = {}): EngineIterator {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return this.reads.iterator(options);
  }

  // ---------------------------------------------------------------- maintenance

  /**
   * Freezes the memtable and resolves once every frozen memtable is in a level-0 table. Rejects with EngineError
   * CLOSED, or the background error (IO, CorruptionError) that stopped flushing.
   */
  async flush(): Promise<void> {
    if (this.closing) throw closedError(`engine ${this.location}`);
    if (this.view) throw readOnlyError(this.location, 'flush');
    if (this.memtables.live.count > 0) this.writes.rotate(0, 0);
    await this.background.waitForFlushes();
  }

  /**
   * Compacts the tables holding keys in [start, end] (both optional) down the levels, level by level, after a
   * flush. Resolves when done; automatic compaction waits meanwhile. Rejects as `flush`.
   */
  async compactRange(start?: Bytes, end?: Bytes): Promise<void> {
    if (this.view) throw readOnlyError(this.location, 'compactRange');
    const begin = start === undefined ? undefined : toKey(start);
    const last = end === undefined ? undefined : toKey(end);
    await this.flush();
    await this.background.compactRange(begin, last);
  }

  /**
   * Writes a consistent copy of the database into `dir` (which must not exist or be empty, and must not lie inside
   * this database's directory, through a symbolic link either): tables are hard-linked (copied across file systems),
   * WALs and a fresh manifest copied; the manifest's last sequence is the last write the copy holds. The copy opens
   * as its own engine. Rejects with EngineError INVALID_ARGUMENT (target not empty, or inside), CLOSED or IO (after
   * removing what it wrote).
   */
  async checkpoint(dir: string): Promise<void> {
    if (this.closing) throw closedError(`engine ${this.location}`);
    if (this.view) throw readOnlyError(this.location, 'checkpoint');
    const logged = this.writes.logged;
    if (!logged) await this.flush();
    // Everything acknowledged is in the WALs' files once what is pending has been written.
    else await this.writes.written();
    if (this.closing) throw closedError(`engine ${this.location}`);
    const logs = logged ? this.memtables.logs() : [];
    const edit = this.versions.snapshotEdit();
    // The copy's manifest names the last sequence the copy holds, never a later one: a copy claiming writes it lacks
    // would number its own next writes after them, and whoever resumes from its sequence (`updatesSince`, a watcher,
    // a follower catching up from the source) would skip them for good. Writes made while the awaits above ran are
    // in a memtable and a WAL's buffer, not all in a file yet; the copy holds those in its tables (every write before
    // the oldest unflushed memtable's first) and those in its logs (every write before the first one not yet in a
    // log file), so it holds every write up to the later of the two, and none after.
    const last = this.versions.lastSequence;
    edit.lastSequence = Math.max(this.memtables.flushedThrough(last), this.writes.writtenThrough(last));
    edit.logNumber = logs.length > 0 ? logs[0]! : this.versions.nextFileNumber;
    // Logs a retention pin keeps go along (linked: nothing appends to them), so the copy can answer updatesSince.
    createCheckpoint(this.location, dir, edit, logs, logged ? this.obsolete.retainedLogs() : []);
  }

  /**
   * The writes after sequence `after`, read back from the WALs this engine still has (the live one, the frozen
   * memtables', and older ones a retention pin kept; see `retainWalAfter`), as `{ ok: true, batches, updates }`
   * (decode them with `forEachUpdate`), or `{ ok: false, reason }` when they are not all there any more (no WAL, a
   * log deleted or damaged). Only writes acknowledged before the call are included. The first call after an open
   * with a `retainWalAfter` pin, before any write, is answered from the batches the open's replay read (no log is
   * read again) when they cover it. Rejects with CLOSED.
   */
  async updatesSince(after: number): Promise<UpdatesSince> {
    if (this.closing) throw closedError(`engine ${this.location}`);
    if (!this.writes.logged) return { ok: false, reason: 'the engine keeps no WAL (wal: false)' };
    const last = this.versions.lastSequence;
    const recovered = this.recovered;
    this.recovered = undefined;
    if (recovered !== undefined && recovered.last === last) {
      const answer = recoveredUpdatesSince(recovered.batches, after, last);
      if (answer !== undefined) return answer;
    }
    await this.writes.written();
    return readUpdatesSince(this.location, after, last);
  }

  /**
   * Follows the writes this engine commits from now on (its last sequence now): `wake` is called once per turn in
   * which writes were committed, from a microtask (never inside the write call: one that throws does not fail the
   * write, its error is rethrown from a microtask), and the follower reads what it has not seen with `read`, in
   * commit order (sequence numbers ascending without a gap), before the writes are durable; one that fell behind the
   * memory kept for it reads the rest with `updatesSince`. A consumer that must not see writes a crash could still
   * lose waits for their durability itself. Close the follower when done. Throws CLOSED.
   */
  follow(wake: () => void): CommitFollower {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return this.writes.feed.follow(this.versions.lastSequence, wake, this.location);
  }

  /** The sequence number of the last write applied (0 for an empty database); cheaper than `stats()`. */
  get lastSequence(): number {
    return this.versions.lastSequence;
  }

  /**
   * Keeps the WALs holding writes after sequence `after` (undefined: none) from now on, even once their data is in
   * tables, for `updatesSince`; logs the pin no longer keeps are deleted at once. Throws CLOSED.
   */
  retainWalAfter(after: number | undefined): void {
    if (this.closing) throw closedError(`engine ${this.location}`);
    this.recovered = undefined;
    this.retention.set(after);
    this.obsolete.collect();
  }

  /**
   * A follower's catch-up: moves its view to the writer's latest state on disk (see `openFollower`), reading only
   * what the writer's manifest and WALs gained since the last one. Reads after it resolves see every write the writer
   * had handed to the OS before it was called. Iterators made before keep their view; a snapshot made before does not
   * (the writer's compactions drop the old values that only the follower's snapshot could see). Rejects with
   * EngineError INVALID_ARGUMENT (not a follower), CLOSED, IO, or CorruptionError (the view is then as it was).
   */
  catchUp(): Promise<void> {
    try {
      if (this.closing) throw closedError(`engine ${this.location}`);
      if (!this.follower || !this.view) throw invalidArgument(`engine ${this.location} is not a follower`);
      this.view.refresh();
      releaseTables(this.view, this.tableCache);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Counters and sizes, for monitoring and tests. */
  stats(): EngineStats {
    return engineStats(this.figures);
  }

  /**
   * A named property as text (LevelDB's `GetProperty`), or undefined for an unknown name: `heapless.stats`,
   * `heapless.levelstats`, `heapless.sstables`, `heapless.table-properties`, `heapless.approximate-memory-usage`,
   * `heapless.num-files-at-level<N>` (see properties.ts). Throws EngineError CLOSED, or CorruptionError / IO from a
   * table that `heapless.table-properties` opens.
   */
  property(name: string): string | undefined {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return propertyValue(name, {
      version: this.versions.current,
      stats: () => this.stats(),
      tables: () => this.tableProperties(),
    });
  }

  /**
   * Every table of the current version with its level, size and the properties its builder recorded (entries,
   * raw sizes, sequence range, codec...). Opens each table's reader. Throws EngineError CLOSED, CorruptionError, IO.
   */
  tableProperties(): TableInfo[] {
    if (this.closing) throw closedError(`engine ${this.location}`);
    return tablesOf(this.versions.current, this.tableCache);
  }

  /**
   * About how many bytes the keys in [start, end) take (undefined bounds: unbounded), LevelDB's
   * GetApproximateSizes: in tables, from their index blocks (compressed bytes, as on disk); in the memtables, the
   * key and value bytes of their entries in the range (see approximate-size.ts). Throws EngineError CLOSED or
   * INVALID_ARGUMENT (a bad key), CorruptionError or IO from a table.
   */
  approximateSize(start?: Bytes, end?: Bytes, options: ApproximateSizeOptions = {}): number {
    if (this.closing) throw closedError(`engine ${this.location}`);
    const from = start === undefined ? undefined : toKey(start);
    const to = end === undefined ? undefined : toKey(end);
    let n = 0;
    if (options.files !== false) n += tableBytesInRange(this.versions.current, this.tableCache, from, to);
    if (options.memtables !== false) n += memtableBytesInRange(this.memtables, from, to);
    return n;
  }

  /** @internal For tests: the tables per level, as `L<n>: number[smallest..largest] ...` lines. */
  debugLevels(): string[] {
    return this.versions.current.dump();
  }

  // ---------------------------------------------------------------- close

  /**
   * Waits for running flushes and compactions, closes open iterators, releases snapshots, syncs and closes the WAL,
   * rewrites a manifest of many edits as one when this engine appended to it (see `VersionSet.rollAtClose`; an engine
   * that took no writes writes and syncs nothing), closes the manifest and every table, stops the worker threads and removes the LOCK. Without a WAL, memtables
   * are flushed first so that nothing written is lost. Writes made after `close()` is called reject with CLOSED.
   * Idempotent. Rejects with the first error met (everything is still released).
   */
  close(): Promise<void> {
    this.closing ??= this.closeAll();
    return this.closing;
  }

  private async closeAll(): Promise<void> {
    this.memtables.stopPendingInserts();
    this.writes.refuse();
    this.background.stop();
    await this.periodic.stop();
    this.reads.closeAll();
    this.snapshots.releaseAll();
    const memtables = this.memtables;
    const unlogged = !this.writes.logged && !this.view;
    if (unlogged && !this.gate.error && (memtables.live.count > 0 || memtables.frozenCount > 0)) {
      // Nothing else holds these writes: flush them before closing.
      memtables.rotate(CLOSING_MEMTABLE_CAPACITY, 0, this.versions.lastSequence + 1);
      this.background.maybeScheduleFlush();
    } else if (!this.view && !this.gate.error) {
      try {
        this.writes.freezeForClose(CLOSING_MEMTABLE_CAPACITY);
      } catch (err) {
        // The writes stay in their WAL, which the next open replays.
        this.gate.fail(err as Error);
      }
    }
    await this.background.settle();
    await this.writes.close();
    // Stalled writes are in the WAL, which is now synced and closed: they are as durable as they can be.
    this.gate.settle();
    let firstError: unknown;
    if (!this.view && !this.gate.error) {
      // No job runs any more: the manifest's state is final, and the next open should parse it as one edit.
      try {
        if (this.versions.rollAtClose()) this.obsolete.collect();
      } catch (err) {
        // The old manifest stays the live one: nothing is lost, the next open reads it as it is.
        firstError = err;
      }
    }
    await this.obsolete.settle();
    try {
      await this.jobs.close();
    } catch (err) {
      firstError = err;
    }
    this.versions.close();
    this.tableCache.close();
    this.blockCache.clear();
    this.readers?.close();
    this.lock?.release();
    this.view?.close();
    // Without a WAL, a failed flush lost writes: close says so.
    if (unlogged) firstError ??= this.gate.error;
    if (firstError !== undefined) throw firstError;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
