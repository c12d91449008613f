/**
 * The engine: a LevelDB-style LSM tree. See README.md for the tour and FORMAT.md for every file layout.
 *
 * Threading: everything runs on the caller's event loop except table writing (flushes and compactions), which runs
 * in a piscina pool of worker threads owned by the engine. Writes are applied to the memtable synchronously, in call
 * order, before their promise is returned; reads are synchronous inside (the async forms resolve at once).
 *
 * Ownership: `Engine.open` returns an engine that holds the directory's LOCK, file descriptors (WAL, manifest, tables)
 * and, once writes filled a quarter of a memtable, worker threads. `close()` releases all of them; iterators and
 * snapshots the caller still holds are closed and released by it.
 */
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { EngineError, ErrorCodes, invalidArgument } from '../base/errors.js';
import { FileType, logFileName, parseFileName, tableFileName } from '../base/filenames.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import { TRAILER_SIZE, ValueKind } from '../base/internal-key.js';
import { type EngineOptions, type ResolvedOptions, resolveOptions } from '../base/options.js';
import { type Compaction, CompactionPicker, rebuildJobError } from '../compaction/compaction.js';
import { flushMemtable, type JobResult, type JobTask, type KeyRange } from '../compaction/compaction-job.js';
import { JobPool } from '../compaction/job-pool.js';
import { DbIterator } from '../iterator/db-iterator.js';
import { LevelIterator } from '../iterator/level-iterator.js';
import { MergingIterator } from '../iterator/merging-iterator.js';
import { LookupResult, Memtable, type SharedArenas } from '../memtable/memtable.js';
import { RecordReader } from '../record/record-reader.js';
import { BlockCache } from '../table/block-cache.js';
import { bloomHash } from '../table/bloom.js';
import { blockCompressor } from '../table/compression.js';
import type { TableBuilderOptions } from '../table/table-builder.js';
import { TableCache } from '../table/table-cache.js';
import { DELETED, type GetResult } from '../table/table-reader.js';
import type { TableSource } from '../version/version.js';
import { type FileMetaData, VersionEdit } from '../version/version-edit.js';
import { VersionSet } from '../version/version-set.js';
import { WalWriter } from '../wal/wal-writer.js';
import { createCheckpoint } from './checkpoint.js';
import { EngineIterator, type IteratorOptions } from './engine-iterator.js';
import { LockFile } from './lock-file.js';
import { type Snapshot, SnapshotList } from './snapshot.js';
import { type BatchHandler, type Bytes, batchCount, batchSequence, replayBatch, WriteBatch } from './write-batch.js';

/** Per-write options. */
export interface WriteOptions {
  /**
   * Resolve only once the write is on disk (fdatasync of the WAL) rather than in the OS (write(2) of the WAL).
   * Default: the engine's `sync` option.
   */
  sync?: boolean;
}

/** Per-read options. */
export interface ReadOptions {
  /** Read as of this snapshot. */
  snapshot?: Snapshot;
}

/** One operation of `engine.write([...])`. */
export type WriteOperation = { type: 'put'; key: Bytes; value: Bytes } | { type: 'del'; key: Bytes };

/** What `engine.stats()` reports. */
export interface EngineStats {
  levels: { files: number; bytes: number }[];
  /** Bytes used by the live memtable and by frozen memtables waiting to be flushed. */
  memtableBytes: number;
  immutableMemtables: number;
  lastSequence: number;
  flushes: number;
  compactions: number;
  trivialMoves: number;
  compactionBytesRead: number;
  compactionBytesWritten: number;
  /** Writes whose promise waited for background work (memtables or level 0 piling up). */
  writeStalls: number;
  /** Writes delayed a little because level 0 passed the slowdown trigger. */
  writeSlowdowns: number;
  liveSnapshots: number;
  openIterators: number;
  openTables: number;
  /** Worker threads of the flush and compaction pool (0 until the memtable was a quarter full, and after close). */
  workerThreads: number;
  blockCache: { hits: number; misses: number; blocks: number; usage: number; capacity: number };
}

/** Frozen memtables waiting for a flush before writes start to wait. */
const MAX_IMMUTABLE_MEMTABLES = 3;

interface Immutable {
  mem: Memtable;
  /** The WAL holding its writes (0 without a WAL). */
  log: number;
}

interface StallWaiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Without a WAL, while flushes or compactions run, one write per this many entries resolves on the next turn. */
const YIELD_EVERY = 1024;

const noop = (): void => {};

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function closedError(dir: string): EngineError {
  return new EngineError(ErrorCodes.CLOSED, `engine ${dir} is closed`);
}

function toKey(key: Bytes): Uint8Array {
  if (typeof key === 'string') return Buffer.from(key, 'utf8');
  if (key instanceof Uint8Array) return key;
  throw invalidArgument(`key must be a Uint8Array or a string, got ${key === null ? 'null' : typeof key}`);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

function userKeyCopy(ikey: Uint8Array): Uint8Array {
  return ikey.slice(0, ikey.length - TRAILER_SIZE);
}

export class Engine {
  /** The database directory. */
  readonly location: string;
  private readonly options: ResolvedOptions;
  private readonly lock: LockFile;
  private readonly versions: VersionSet;
  private readonly blockCache: BlockCache;
  private readonly tableCache: TableCache;
  private readonly tables: TableSource;
  private readonly picker: CompactionPicker;
  private readonly snapshots = new SnapshotList();
  private readonly builderOptions: TableBuilderOptions;
  private mem: Memtable;
  private memLog: number;
  /** Frozen memtables, oldest first. */
  private readonly imms: Immutable[] = [];
  /** Buffers of the last flush's memtable copy, moved back by the worker, for the next copy. */
  private shareArenas: SharedArenas | undefined;
  /** A flushed memtable nothing reads any more, whose arenas the next memtable takes over. */
  private spare: Memtable | undefined;
  private wal: WalWriter | undefined;
  /** Final syncs of rotated WALs still running. */
  private readonly walClosing = new Set<Promise<void>>();
  private pool: JobPool | undefined;
  private poolStarting: Promise<JobPool> | undefined;
  private flushing: Promise<void> | undefined;
  private compacting: Promise<void> | undefined;
  private manualCompaction = false;
  private bgError: Error | undefined;
  private stallWaiters: StallWaiter[] = [];
  private readonly iterators = new Set<EngineIterator>();
  /** Table numbers being written: not live yet, not to be deleted. */
  private readonly pendingOutputs = new Set<number>();
  private closing: Promise<void> | undefined;
  /** Obsolete files being unlinked, by name. */
  private readonly deleting = new Map<string, Promise<void>>();
  // Reused on every write so that a put allocates nothing but what the caller passed in.
  private readonly scratch = new WriteBatch(undefined, 1024);
  private readonly cursor = new Int32Array(1);
  private readonly inserter: BatchHandler;
  private readonly resolved = Promise.resolve();
  private keyScratch = Buffer.allocUnsafe(256);
  private writesSinceYield = 0;
  private readonly onWalError = (err: Error): void => this.setBackgroundError(err);
  private readonly counters = {
    flushes: 0,
    compactions: 0,
    trivialMoves: 0,
    compactionBytesRead: 0,
    compactionBytesWritten: 0,
    writeStalls: 0,
    writeSlowdowns: 0,
  };

  private constructor(dir: string, options: ResolvedOptions, lock: LockFile, versions: VersionSet) {
    this.location = dir;
    this.options = options;
    this.lock = lock;
    this.versions = versions;
    this.blockCache = new BlockCache({ capacity: options.blockCacheSize });
    this.tableCache = new TableCache(dir, {
      maxOpenFiles: options.maxOpenFiles,
      blockCache: this.blockCache,
      verifyChecksums: options.verifyChecksums,
    });
    const cache = this.tableCache;
    this.tables = {
      get: (f: FileMetaData, userKey: Uint8Array, seq: number, hash: number): GetResult =>
        cache.get(f.number).get(userKey, seq, hash),
      iterator: (f: FileMetaData, fillCache?: boolean): InternalIterator => cache.get(f.number).iterator({ fillCache }),
    };
    this.picker = new CompactionPicker(options);
    this.builderOptions = {
      blockSize: options.blockSize,
      restartInterval: options.blockRestartInterval,
      bloomBitsPerKey: options.bloomBitsPerKey,
      compression: options.compression,
      zstdLevel: options.zstdLevel,
    };
    // Room for nothing: the first write finds it full and rotates to a full-size memtable (`rotate` freezes only a
    // memtable that holds something). An engine that is only read never allocates the ~10 MiB of arenas, and open
    // does not pay for them.
    this.mem = new Memtable(0);
    this.memLog = 0;
    this.inserter = {
      put: (buf, ks, kl, vs, vl, seq) => this.mem.add(seq, ValueKind.Value, buf, ks, kl, buf, vs, vl),
      del: (buf, ks, kl, seq) => this.mem.add(seq, ValueKind.Deletion, buf, ks, kl, buf, 0, 0),
    };
  }

  /**
   * Opens (creating by default) the database in `dir`: replays the WAL into tables, writes a fresh manifest and
   * starts a new WAL; after a clean close open writes nothing (the WAL is replayed into the live memtable, and it
   * and the manifest are appended to). Tables are opened at their first read. Resolves to an engine the caller must
   * `close()`.
   *
   * Throws (rejects with) EngineError: LOCKED if another open holds `dir`; NOT_FOUND when there is no database and
   * `createIfMissing` is false, or there is one and `errorIfExists` is true; INVALID_ARGUMENT for bad options;
   * UNSUPPORTED for a `compression` this runtime cannot write (zstd before Node 22.15, a codec binding that does not
   * load); IO;
   * CorruptionError when the manifest, a WAL record in the middle of a log, or a table read during recovery is bad,
   * or when the manifest does not match the files in `dir`; a failed open leaves every file in `dir` as it was.
   */
  static async open(dir: string, options?: EngineOptions): Promise<Engine> {
    return Engine.openSync(dir, options);
  }

  private static openSync(dir: string, options?: EngineOptions): Engine {
    const opts = resolveOptions(options);
    // A codec that cannot be used here (zstd before Node 22.15, a binding that does not load) fails the open, not the
    // first flush in a worker.
    blockCompressor(opts.compression, opts.zstdLevel);
    if (typeof dir !== 'string' || dir.length === 0) throw invalidArgument('dir must be a non-empty string');
    if (opts.createIfMissing) {
      try {
        mkdirSync(dir, { recursive: true });
      } catch (err) {
        throw new EngineError(ErrorCodes.IO, `creating ${dir} failed: ${(err as Error).message}`, { cause: err });
      }
    }
    const exists = VersionSet.exists(dir);
    if (!exists && !opts.createIfMissing) {
      throw new EngineError(
        ErrorCodes.NOT_FOUND,
        `${dir} does not exist: no database there (createIfMissing is false)`,
      );
    }
    if (exists && opts.errorIfExists) {
      throw new EngineError(ErrorCodes.NOT_FOUND, `a database already exists in ${dir} (errorIfExists is true)`);
    }
    const lock = LockFile.acquire(dir);
    const versions = new VersionSet(dir, opts.numLevels);
    let engine: Engine | undefined;
    try {
      if (exists) versions.recover();
      engine = new Engine(dir, opts, lock, versions);
      engine.recover();
      return engine;
    } catch (err) {
      if (engine) {
        void engine.wal?.close();
        void engine.poolStarting?.then((pool) => pool.close());
        engine.closeResources();
      }
      versions.close();
      lock.release();
      throw err;
    }
  }

  /**
   * Replays the WALs the manifest still needs, then makes the engine ready to write.
   *
   * Nothing on disk changes before the manifest's state has been checked against the directory
   * (`VersionSet.verifyFiles`); if the open then fails, the files it wrote (tables of replayed writes, a new WAL) are
   * removed again, so a failed open leaves the directory as it found it. Obsolete files are deleted only once a
   * manifest that no longer needs them is durable.
   *
   * After a clean close (the manifest read to its end; with a WAL, exactly one log left, ending with a whole record,
   * its records fitting one memtable; without a WAL, no log) there is nothing to record, so open writes and syncs
   * nothing: the manifest is appended to as it is, the replayed memtable becomes the live one and its WAL the live
   * WAL, new writes following the old ones. That holds because the manifest's log number is that WAL's number, so the
   * next recovery replays it. Otherwise the replayed writes go to level-0 tables and one fresh manifest records them
   * together with a new WAL.
   */
  private recover(): void {
    const versions = this.versions;
    const names = readdirSync(this.location);
    versions.verifyFiles(names);
    const created: string[] = [];
    try {
      this.replayAndRecord(names, created);
    } catch (err) {
      for (const path of created) {
        try {
          unlinkSync(path);
        } catch {
          // Never written.
        }
      }
      throw err;
    }
    // Only from here on may obsolete files go: before the new manifest is durable, the old one may still be the one
    // CURRENT names, and it needs the WALs just replayed.
    versions.onVersionReleased = () => {
      if (!this.closing) this.deleteObsoleteFiles();
    };
    this.deleteObsoleteFiles(names);
    this.maybeScheduleCompaction();
  }

  /** Recovery's writing part (see `recover`); every file it creates is listed in `created` before it is written. */
  private replayAndRecord(names: readonly string[], created: string[]): void {
    const versions = this.versions;
    const logs: number[] = [];
    for (const name of names) {
      const f = parseFileName(name);
      if (!f) continue;
      versions.markFileNumberUsed(f.number);
      if (f.type === FileType.Log && f.number >= versions.logNumber) logs.push(f.number);
    }
    logs.sort((a, b) => a - b);
    const edit = new VersionEdit();
    // Room for nothing: sized at the first record, so an open with nothing to replay allocates no arenas.
    let mem = new Memtable(0);
    let maxSequence = versions.lastSequence;
    /** Bytes of the last log, when it ends with a whole record; -1 after a torn tail. */
    let logEnd = 0;
    const flushRecovered = () => {
      if (mem.count === 0) return;
      const number = versions.newFileNumber();
      created.push(tableFileName(this.location, number));
      const result = flushMemtable({
        kind: 'flush',
        dir: this.location,
        number,
        memtable: mem.share(),
        builder: this.builderOptions,
      });
      for (const o of result.outputs) edit.addFile(0, o);
    };
    const handler: BatchHandler = {
      put: (buf, ks, kl, vs, vl, seq) => mem.add(seq, ValueKind.Value, buf, ks, kl, buf, vs, vl),
      del: (buf, ks, kl, seq) => mem.add(seq, ValueKind.Deletion, buf, ks, kl, buf, 0, 0),
    };
    for (const n of logs) {
      const path = logFileName(this.location, n);
      const reader = new RecordReader(path);
      for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
        const count = batchCount(rec);
        if (!mem.hasRoomFor(rec.length, count)) {
          flushRecovered();
          mem = new Memtable(Math.max(this.options.writeBufferSize, Memtable.capacityForBatch(rec.length, count)));
        }
        const seq = batchSequence(rec);
        replayBatch(rec, rec.length, seq, handler, this.cursor, path, reader.recordOffset);
        if (count > 0 && seq + count - 1 > maxSequence) maxSequence = seq + count - 1;
      }
      logEnd = reader.validLength === reader.fileSize ? reader.fileSize : -1;
    }
    versions.lastSequence = maxSequence;
    const wal = this.options.wal;
    // With a WAL, the manifest's log number must name the live WAL (`verifyFiles` relies on it): a database last
    // written without one (no log left) records its new WAL. Without a WAL, a replayed log must be retired by a
    // manifest: nothing else would ever stop it being replayed.
    const clean = edit.newFiles.length === 0 && logEnd >= 0 && logs.length === (wal ? 1 : 0);
    if (clean && versions.reuseManifest()) {
      const log = logs[0];
      if (log !== undefined) {
        if (mem.count > 0) this.mem = mem;
        this.startWal(log, logEnd);
      }
      return;
    }
    flushRecovered();
    if (wal) {
      const number = versions.newFileNumber();
      created.push(logFileName(this.location, number));
      this.startWal(number);
    }
    // The new log number (without a WAL: the next file number) retires every log replayed here.
    edit.logNumber = wal ? this.memLog : versions.nextFileNumber;
    // One new manifest records the recovered tables and the new log number together (tables are already synced).
    versions.applyUnlogged(edit);
    versions.writeNewManifest();
  }

  /** Makes log `number` the live WAL: a new file, or with `appendAt` the replayed log of that size. */
  private startWal(number: number, appendAt?: number): void {
    this.memLog = number;
    this.wal = new WalWriter(logFileName(this.location, number), number, this.onWalError, undefined, appendAt);
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
    const b = this.scratch.clear();
    try {
      b.put(key, value);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.apply(b, options?.sync);
  }

  /** Deletes `key` (no error if absent). Ordering, durability and errors as `put`. */
  delete(key: Bytes, options?: WriteOptions): Promise<void> {
    const b = this.scratch.clear();
    try {
      b.del(key);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.apply(b, options?.sync);
  }

  /**
   * Applies puts and deletes atomically (one WAL record, consecutive sequence numbers): a crash keeps all or none.
   * Ordering, durability and errors as `put`; a bad operation rejects the whole batch before anything is written.
   */
  write(ops: readonly WriteOperation[] | WriteBatch, options?: WriteOptions): Promise<void> {
    if (ops instanceof WriteBatch) return this.apply(ops, options?.sync);
    if (!Array.isArray(ops))
      return Promise.reject(invalidArgument('write takes an array of operations or a WriteBatch'));
    const b = this.scratch.clear();
    try {
      for (const op of ops) {
        if (op?.type === 'put') b.put(op.key, op.value);
        else if (op?.type === 'del') b.del(op.key);
        else throw invalidArgument(`unknown operation type ${String(op?.type)}`);
      }
    } catch (err) {
      b.clear();
      return Promise.reject(err);
    }
    return this.apply(b, options?.sync);
  }

  /** A chained batch: `.put()`, `.del()`, `.clear()`, then `.write(options)` (atomic, as `write`). */
  batch(): WriteBatch {
    return new WriteBatch((b, sync) => this.apply(b, sync), 4096);
  }

  private apply(batch: WriteBatch, sync: boolean | undefined): Promise<void> {
    if (this.closing) return Promise.reject(closedError(this.location));
    if (this.bgError) return Promise.reject(this.bgError);
    const count = batch.count;
    if (count === 0) return this.resolved;
    if (!this.mem.hasRoomFor(batch.length, count)) {
      try {
        this.rotate(batch.length, count);
      } catch (err) {
        this.setBackgroundError(err as Error);
        return Promise.reject(err);
      }
    }
    const seq = this.versions.lastSequence + 1;
    batch.seal(seq);
    const wal = this.wal;
    if (wal) wal.append(batch.rep, 0, batch.length);
    replayBatch(batch.rep, batch.length, seq, this.inserter, this.cursor, 'write batch', 0);
    this.versions.lastSequence = seq + count - 1;
    // The worker threads start once the memtable is a quarter full, so that they have loaded (it takes a while) by
    // the time its flush needs them, and a session that writes little starts none.
    if (this.poolStarting === undefined && this.mem.memoryUsage >= this.options.writeBufferSize / 4)
      this.startPool().catch((err: unknown) => this.setBackgroundError(err as Error));
    if (this.mem.memoryUsage >= this.options.writeBufferSize) {
      try {
        this.rotate(0, 0);
      } catch (err) {
        this.setBackgroundError(err as Error);
      }
    }
    if (wal === undefined) {
      // Without a WAL nothing is durable before close: the write is done once it is in the memtable. A writer
      // awaiting each such write never leaves the microtask queue, so a finished flush (a worker message) would not
      // be seen until writes stall: while background work runs, one write per YIELD_EVERY entries waits a turn.
      this.writesSinceYield += count;
      if (this.writesSinceYield >= YIELD_EVERY && (this.flushing || this.compacting)) {
        this.writesSinceYield = 0;
        return this.throttled(nextTurn());
      }
      return this.throttled(this.resolved);
    }
    // Durable to the level asked: in the OS (the write(2) of this turn returned), or on disk (an fdatasync after it).
    const durable = (sync ?? this.options.sync) ? wal.waitForSync() : wal.written();
    return this.throttled(durable);
  }

  /**
   * The promise of a write that is `durable` once that settles, delayed when background work lags: it waits for
   * the flushes when frozen memtables or level-0 tables pile up (stall), and for one more event-loop turn past the
   * slowdown trigger.
   */
  private throttled(durable: Promise<void>): Promise<void> {
    const l0 = this.versions.current.files[0]!.length;
    if (this.imms.length >= MAX_IMMUTABLE_MEMTABLES || l0 >= this.options.level0StopTrigger) {
      this.counters.writeStalls++;
      const stalled = new Promise<void>((resolve, reject) => this.stallWaiters.push({ resolve, reject }));
      return Promise.all([durable, stalled]).then(noop);
    }
    if (l0 >= this.options.level0SlowdownTrigger) {
      this.counters.writeSlowdowns++;
      return durable.then(nextTurn);
    }
    return durable;
  }

  /** Freezes the memtable (if it holds anything), starts a new one and a new WAL, and schedules the flush. */
  private rotate(needBytes: number, needEntries: number): void {
    const capacity = Math.max(this.options.writeBufferSize, Memtable.capacityForBatch(needBytes, needEntries));
    if (this.mem.count > 0) {
      this.imms.push({ mem: this.mem, log: this.memLog });
      if (this.wal) {
        const number = this.versions.newFileNumber();
        const closed = this.wal.close();
        this.walClosing.add(closed);
        void closed.then(() => this.walClosing.delete(closed));
        this.wal = new WalWriter(logFileName(this.location, number), number, this.onWalError, closed);
        this.memLog = number;
      }
    }
    const spare = this.spare;
    this.spare = undefined;
    this.mem = new Memtable(capacity, undefined, spare);
    this.maybeScheduleFlush();
  }

  private setBackgroundError(err: Error): void {
    if (this.bgError) return;
    this.bgError = err;
    const waiters = this.stallWaiters;
    this.stallWaiters = [];
    for (const w of waiters) w.reject(err);
  }

  private releaseStalls(): void {
    if (this.stallWaiters.length === 0) return;
    if (this.imms.length >= MAX_IMMUTABLE_MEMTABLES) return;
    if (this.versions.current.files[0]!.length >= this.options.level0StopTrigger) return;
    const waiters = this.stallWaiters;
    this.stallWaiters = [];
    for (const w of waiters) w.resolve();
  }

  // ---------------------------------------------------------------- reads

  private sequenceFor(options: ReadOptions | undefined): number {
    const s = options?.snapshot;
    return s === undefined ? this.versions.lastSequence : s.check(this.snapshots);
  }

  private keyBytes(key: Bytes): Uint8Array {
    if (typeof key === 'string') {
      const n = key.length;
      if (this.keyScratch.length < n * 3) this.keyScratch = Buffer.allocUnsafe(n * 6);
      const scratch = this.keyScratch;
      // Short ASCII keys by hand: cheaper than a call into the UTF-8 encoder.
      if (n <= 64) {
        let i = 0;
        for (; i < n; i++) {
          const c = key.charCodeAt(i);
          if (c >= 0x80) break;
          scratch[i] = c;
        }
        if (i === n) return scratch.subarray(0, n);
      }
      return scratch.subarray(0, scratch.write(key, 0, 'utf8'));
    }
    if (key instanceof Uint8Array) return key;
    throw invalidArgument(`key must be a Uint8Array or a string, got ${key === null ? 'null' : typeof key}`);
  }

  /**
   * The value of `key` (a copy the caller owns), or undefined. Synchronous. Throws EngineError CLOSED or
   * INVALID_ARGUMENT (bad key, released snapshot), or CorruptionError from a table.
   */
  getSync(key: Bytes, options?: ReadOptions): Uint8Array | undefined {
    if (this.closing) throw closedError(this.location);
    const seq = this.sequenceFor(options);
    const k = this.keyBytes(key);
    return this.lookup(k, seq);
  }

  private lookup(k: Uint8Array, seq: number): Uint8Array | undefined {
    // One hash for every memtable's and table's filter.
    const hash = bloomHash(k, 0, k.length);
    let mem = this.mem;
    let r = mem.get(k, 0, k.length, seq, hash);
    for (let i = this.imms.length - 1; r === LookupResult.NotFound && i >= 0; i--) {
      mem = this.imms[i]!.mem;
      r = mem.get(k, 0, k.length, seq, hash);
    }
    if (r === LookupResult.Value) return mem.bytes.slice(mem.valueOffset, mem.valueOffset + mem.valueLength);
    if (r === LookupResult.Deleted) return undefined;
    const t = this.versions.current.get(k, seq, this.tables, hash);
    return t === undefined || t === DELETED ? undefined : t.slice();
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
      if (this.closing) throw closedError(this.location);
      if (!Array.isArray(keys)) throw invalidArgument('getMany takes an array of keys');
      const seq = this.sequenceFor(options);
      const bytes = keys.map(toKey);
      const order = bytes.map((_, i) => i).sort((a, b) => compareBytes(bytes[a]!, bytes[b]!));
      const out = new Array<Uint8Array | undefined>(keys.length);
      for (const i of order) out[i] = this.lookup(bytes[i]!, seq);
      return Promise.resolve(out);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** A snapshot of the current state; the caller must `release()` it (close releases any left). Throws CLOSED. */
  snapshot(): Snapshot {
    if (this.closing) throw closedError(this.location);
    return this.snapshots.create(this.versions.lastSequence);
  }

  /**
   * An iterator over a consistent view (as of now, or of `options.snapshot`), within the bounds, in key order or
   * reverse. The caller must close it (or finish a `for await`); the engine's close closes any left. Throws
   * EngineError CLOSED or INVALID_ARGUMENT.
   */
  iterator(options: IteratorOptions = {}): EngineIterator {
    if (this.closing) throw closedError(this.location);
    const seq = this.sequenceFor(options);
    const fillCache = options.fillCache !== false;
    const version = this.versions.current;
    version.ref();
    const children: InternalIterator[] = [];
    try {
      children.push(this.mem.iterator());
      for (let i = this.imms.length - 1; i >= 0; i--) children.push(this.imms[i]!.mem.iterator());
      for (const f of version.files[0]!) children.push(this.tables.iterator(f, fillCache));
      for (let level = 1; level < version.files.length; level++) {
        const files = version.files[level]!;
        if (files.length > 0) children.push(new LevelIterator(files, this.tables, fillCache));
      }
      const db = new DbIterator(new MergingIterator(children), seq);
      const it = new EngineIterator(db, options, (closed) => {
        this.iterators.delete(closed);
        version.unref();
      });
      this.iterators.add(it);
      return it;
    } catch (err) {
      for (const c of children) c.close();
      version.unref();
      throw err;
    }
  }

  // ---------------------------------------------------------------- background work

  /** Starts the worker pool (idempotent): when the memtable is a quarter full, or at the first job. */
  private startPool(): Promise<JobPool> {
    this.poolStarting ??= JobPool.start().then((pool) => {
      this.pool = pool;
      return pool;
    });
    return this.poolStarting;
  }

  private async runJob(task: JobTask): Promise<JobResult> {
    const pool = await this.startPool();
    // A flush's arenas are fresh copies: move them to the worker instead of cloning megabytes.
    const transferList = task.kind === 'flush' ? [task.memtable.bytes, task.memtable.nodes] : undefined;
    const r = await pool.run(task, transferList);
    if ('error' in r) throw rebuildJobError(r.error);
    return r;
  }

  private takeShareArenas(): SharedArenas | undefined {
    const a = this.shareArenas;
    this.shareArenas = undefined;
    return a;
  }

  private maybeScheduleFlush(): void {
    if (this.flushing || this.imms.length === 0 || this.bgError) return;
    this.flushing = this.flushLoop().finally(() => {
      this.flushing = undefined;
      // A memtable frozen while the loop was ending found it still running and scheduled nothing.
      this.maybeScheduleFlush();
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.imms.length > 0 && !this.bgError) {
      const imm = this.imms[0]!;
      const number = this.versions.newFileNumber();
      this.pendingOutputs.add(number);
      try {
        const result = await this.runJob({
          kind: 'flush',
          dir: this.location,
          number,
          memtable: imm.mem.share(this.takeShareArenas()),
          builder: this.builderOptions,
        });
        if (result.arenas) this.shareArenas = result.arenas;
        const edit = new VersionEdit();
        for (const o of result.outputs) edit.addFile(0, o);
        // The oldest WAL still needed: the next frozen memtable's, or the live one's.
        edit.logNumber = this.wal ? (this.imms[1]?.log ?? this.memLog) : this.versions.logNumber;
        this.versions.logAndApply(edit);
        this.imms.shift();
        this.counters.flushes++;
        // Its arenas can serve the next memtable unless an iterator still reads them.
        if (!imm.mem.inUse) this.spare = imm.mem;
      } catch (err) {
        this.setBackgroundError(err as Error);
        return;
      } finally {
        this.pendingOutputs.delete(number);
      }
      this.deleteObsoleteFiles();
      this.releaseStalls();
      this.maybeScheduleCompaction();
    }
  }

  private maybeScheduleCompaction(): void {
    if (this.compacting || this.manualCompaction || this.bgError || this.closing) return;
    if (this.picker.bestScore(this.versions.current).score < 1) return;
    this.compacting = this.compactionLoop().finally(() => {
      this.compacting = undefined;
      // A flush that finished while the loop was ending found it still running and scheduled nothing.
      this.maybeScheduleCompaction();
    });
  }

  private async compactionLoop(): Promise<void> {
    while (!this.bgError && !this.closing && !this.manualCompaction) {
      const c = this.picker.pick(this.versions.current);
      if (!c) return;
      try {
        await this.runCompaction(c);
      } catch (err) {
        this.setBackgroundError(err as Error);
        return;
      }
    }
  }

  private async runCompaction(c: Compaction): Promise<void> {
    const edit = new VersionEdit();
    const out = c.level + 1;
    if (c.trivialMove) {
      const f = c.inputs[0]!;
      edit.deleteFile(c.level, f.number);
      edit.addFile(out, f);
      this.versions.logAndApply(edit);
      this.counters.trivialMoves++;
      this.releaseStalls();
      return;
    }
    let bytes = 0;
    for (const f of c.inputs) bytes += f.size;
    for (const f of c.nextInputs) bytes += f.size;
    const outputNumbers: number[] = [];
    const reserve = Math.ceil((bytes * 1.25) / this.options.targetFileSize) + 2;
    for (let i = 0; i < reserve; i++) {
      const n = this.versions.newFileNumber();
      outputNumbers.push(n);
      this.pendingOutputs.add(n);
    }
    const version = this.versions.current;
    const deeper: KeyRange[][] = [];
    for (let level = out + 1; level < version.files.length; level++) {
      deeper.push(
        version.files[level]!.map((f) => ({ smallest: userKeyCopy(f.smallest), largest: userKeyCopy(f.largest) })),
      );
    }
    try {
      const result = await this.runJob({
        kind: 'compact',
        dir: this.location,
        inputs: [...c.inputs, ...c.nextInputs].map((f) => f.number),
        outputNumbers,
        deeper,
        smallestSnapshot: this.snapshots.oldest(this.versions.lastSequence),
        targetFileSize: this.options.targetFileSize,
        builder: this.builderOptions,
      });
      for (const f of c.inputs) edit.deleteFile(c.level, f.number);
      for (const f of c.nextInputs) edit.deleteFile(out, f.number);
      for (const o of result.outputs) edit.addFile(out, o);
      this.versions.logAndApply(edit);
      this.counters.compactions++;
      this.counters.compactionBytesRead += result.bytesRead;
      this.counters.compactionBytesWritten += result.bytesWritten;
    } finally {
      for (const n of outputNumbers) this.pendingOutputs.delete(n);
    }
    this.deleteObsoleteFiles();
    this.releaseStalls();
  }

  /**
   * Deletes WALs older than the manifest's log number, tables no live version lists, manifests CURRENT does not name
   * and temps. `listing`: the directory's names when the caller just read them (open).
   */
  private deleteObsoleteFiles(listing?: readonly string[]): void {
    const versions = this.versions;
    const live = versions.liveTableNumbers();
    let names: readonly string[];
    try {
      names = listing ?? readdirSync(this.location);
    } catch {
      return;
    }
    for (const name of names) {
      const f = parseFileName(name);
      if (!f) continue;
      let remove = false;
      switch (f.type) {
        case FileType.Log:
          remove = f.number < versions.logNumber;
          break;
        case FileType.Table:
          remove = !live.has(f.number) && !this.pendingOutputs.has(f.number);
          if (remove) this.tableCache.evict(f.number);
          break;
        case FileType.Manifest:
          // Also a newer one: a crash between writing a new manifest and renaming CURRENT leaves one behind, and an
          // open that reuses the manifest CURRENT names writes none that would make it older.
          remove = f.number !== versions.manifestNumber;
          break;
        case FileType.Temp:
          remove = true;
          break;
        default:
          break;
      }
      if (remove && !this.deleting.has(name)) {
        // Off the event loop: unlinking a large table can take a while. Failures (already gone) are retried by the
        // next pass; close() waits for these.
        const done = unlink(`${this.location}/${name}`)
          .catch(() => {})
          .finally(() => this.deleting.delete(name));
        this.deleting.set(name, done);
      }
    }
  }

  /**
   * Freezes the memtable and resolves once every frozen memtable is in a level-0 table. Rejects with EngineError
   * CLOSED, or the background error (IO, CorruptionError) that stopped flushing.
   */
  async flush(): Promise<void> {
    if (this.closing) throw closedError(this.location);
    if (this.mem.count > 0) this.rotate(0, 0);
    while (this.flushing) await this.flushing;
    if (this.bgError) throw this.bgError;
  }

  /**
   * Compacts the tables holding keys in [start, end] (both optional) down the levels, level by level, after a
   * flush. Resolves when done; automatic compaction waits meanwhile. Rejects as `flush`.
   */
  async compactRange(start?: Bytes, end?: Bytes): Promise<void> {
    const begin = start === undefined ? undefined : toKey(start);
    const last = end === undefined ? undefined : toKey(end);
    await this.flush();
    while (this.manualCompaction) await new Promise((r) => setImmediate(r));
    this.manualCompaction = true;
    try {
      while (this.compacting) await this.compacting;
      if (this.bgError) throw this.bgError;
      const v = this.versions.current;
      let deepest = 0;
      for (let level = 1; level < v.files.length; level++) {
        if (v.overlapping(level, begin, last).length > 0) deepest = level;
      }
      for (let level = 0; level < Math.max(1, deepest) && level < this.options.numLevels - 1; level++) {
        if (this.closing) throw closedError(this.location);
        const c = this.picker.pickRange(this.versions.current, level, begin, last);
        if (c) await this.runCompaction(c);
      }
    } catch (err) {
      if (!(err instanceof EngineError && err.code === ErrorCodes.CLOSED)) this.setBackgroundError(err as Error);
      throw err;
    } finally {
      this.manualCompaction = false;
      this.maybeScheduleCompaction();
    }
  }

  /**
   * Writes a consistent copy of the database into `dir` (which must not exist or be empty): tables are hard-linked
   * (copied across file systems), WALs and a fresh manifest copied. The copy opens as its own engine. Rejects with
   * EngineError INVALID_ARGUMENT (target not empty), CLOSED or IO.
   */
  async checkpoint(dir: string): Promise<void> {
    if (this.closing) throw closedError(this.location);
    if (!this.wal) await this.flush();
    // Everything acknowledged is in the WALs' files once what is pending has been written.
    if (this.wal) await this.wal.written();
    if (this.closing) throw closedError(this.location);
    const logs = this.wal ? [...this.imms.map((i) => i.log), this.memLog] : [];
    const edit = this.versions.snapshotEdit();
    edit.logNumber = logs.length > 0 ? logs[0]! : this.versions.nextFileNumber;
    createCheckpoint(this.location, dir, edit, logs);
  }

  /** Counters and sizes, for monitoring and tests. */
  stats(): EngineStats {
    const v = this.versions.current;
    let memtableBytes = this.mem.memoryUsage;
    for (const i of this.imms) memtableBytes += i.mem.memoryUsage;
    return {
      levels: v.files.map((files, level) => ({ files: files.length, bytes: v.levelBytes(level) })),
      memtableBytes,
      immutableMemtables: this.imms.length,
      lastSequence: this.versions.lastSequence,
      ...this.counters,
      liveSnapshots: this.snapshots.size,
      openIterators: this.iterators.size,
      openTables: this.tableCache.openCount,
      workerThreads: this.pool?.threads ?? 0,
      blockCache: this.blockCache.stats(),
    };
  }

  /** @internal For tests: the tables per level, as `L<n>: number[smallest..largest] ...` lines. */
  debugLevels(): string[] {
    return this.versions.current.dump();
  }

  // ---------------------------------------------------------------- close

  /**
   * Waits for running flushes and compactions, closes open iterators, releases snapshots, syncs and closes the WAL,
   * closes the manifest and every table, stops the worker threads and removes the LOCK. Without a WAL, memtables
   * are flushed first so that nothing written is lost. Writes made after `close()` is called reject with CLOSED.
   * Idempotent. Rejects with the first error met (everything is still released).
   */
  close(): Promise<void> {
    this.closing ??= this.closeAll();
    return this.closing;
  }

  private async closeAll(): Promise<void> {
    let firstError: unknown;
    const keep = (err: unknown) => {
      firstError ??= err;
    };
    for (const it of [...this.iterators]) it.closeSync();
    this.snapshots.releaseAll();
    if (!this.wal && !this.bgError && (this.mem.count > 0 || this.imms.length > 0)) {
      if (this.mem.count > 0) {
        this.imms.push({ mem: this.mem, log: 0 });
        this.mem = new Memtable(4096);
      }
      this.maybeScheduleFlush();
    }
    while (this.flushing || this.compacting) {
      await this.flushing?.catch(keep);
      await this.compacting?.catch(keep);
    }
    if (this.wal) await this.wal.close();
    await Promise.all([...this.walClosing]);
    // Stalled writes are in the WAL, which is now synced and closed: they are as durable as they can be.
    const waiters = this.stallWaiters;
    this.stallWaiters = [];
    for (const w of waiters) {
      if (this.bgError) w.reject(this.bgError);
      else w.resolve();
    }
    await Promise.all([...this.deleting.values()]);
    try {
      await this.poolStarting;
      await this.pool?.close();
    } catch (err) {
      keep(err);
    }
    this.pool = undefined;
    this.closeResources();
    if (this.bgError && !this.wal) keep(this.bgError);
    if (firstError !== undefined) throw firstError;
  }

  private closeResources(): void {
    this.versions.close();
    this.tableCache.close();
    this.blockCache.clear();
    this.lock.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
