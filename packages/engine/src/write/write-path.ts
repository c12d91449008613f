/**
 * The write path (Pebble's commit pipeline, in one thread): a write is encoded once into a reused batch, takes the
 * next sequence numbers, is appended to the WAL's buffer and inserted into the live memtable, all synchronously and
 * in call order, so a read right after the call sees it. Its promise resolves when it is durable to the level asked
 * (the WAL's group commit, wal-writer.ts), later when background work lags (write-gate.ts).
 *
 * A full memtable is frozen and a new one started with a new WAL (`rotate`); background work flushes the frozen one.
 *
 * Ownership: the write path owns the live WAL and the closes of rotated ones; `close()` syncs and closes them all.
 */
import { closedError, invalidArgument } from '../base/errors.js';
import { logFileName } from '../base/filenames.js';
import type { ResolvedOptions } from '../base/options.js';
import type { JobPool } from '../compaction/job-pool.js';
import { Memtable } from '../memtable/memtable.js';
import { RecordWriter } from '../record/record-writer.js';
import type { VersionSet } from '../version/version-set.js';
import { WalWriter } from '../wal/wal-writer.js';
import { CommitFeed } from './commit-feed.js';
import { insertInto, type MemtableSet } from './memtables.js';
import { type BatchHandler, type Bytes, replayBatch, WriteBatch } from './write-batch.js';
import { nextTurn, type WriteGate } from './write-gate.js';

/** One operation of `engine.write([...])`. */
export type WriteOperation = { type: 'put'; key: Bytes; value: Bytes } | { type: 'del'; key: Bytes };

/**
 * What the write path asks of background work (background.ts, which sits above the write path): a flush once a
 * memtable is frozen, a compaction once writes began, and whether either runs now.
 */
export interface BackgroundScheduler {
  readonly busy: boolean;
  maybeScheduleFlush(): void;
  maybeScheduleCompaction(): void;
}

/** What the write path needs of the engine, each part whole. */
export interface WritePathParts {
  dir: string;
  options: ResolvedOptions;
  versions: VersionSet;
  memtables: MemtableSet;
  gate: WriteGate;
  background: BackgroundScheduler;
  jobs: JobPool;
  /** The live WAL's file (recovery created it, or reopened the replayed log), numbered `memtables.liveLog`; absent without a WAL. */
  log: RecordWriter | undefined;
}

/** Without a WAL, while flushes or compactions run, one write per this many entries resolves on the next turn. */
const YIELD_EVERY = 1024;

export class WritePath {
  private readonly dir: string;
  private readonly options: ResolvedOptions;
  private readonly versions: VersionSet;
  private readonly memtables: MemtableSet;
  private readonly gate: WriteGate;
  private readonly background: BackgroundScheduler;
  private readonly jobs: JobPool;
  private wal: WalWriter | undefined;
  /** Final syncs of rotated WALs still running. */
  private readonly walClosing = new Set<Promise<void>>();
  /** The rotated WALs those syncs belong to: until closed, each may still hold writes not yet in its file. */
  private readonly walClosingWriters = new Set<WalWriter>();
  // Reused on every write so that a put allocates nothing but what the caller passed in.
  private readonly scratch = new WriteBatch(undefined, 1024);
  private readonly cursor = new Int32Array(1);
  private readonly inserter: BatchHandler;
  private readonly resolved = Promise.resolve();
  private readonly onWalError = (err: Error): void => this.gate.fail(err);
  private writesSinceYield = 0;
  /** Bytes of the batches written (keys, values and their framing), the base of write amplification. */
  bytesWritten = 0;
  /** The batches applied, kept for their followers (`Engine.follow`) while there are any. */
  readonly feed = new CommitFeed();
  private poolWarm = false;
  /** Set at the first write, which resumes the compaction a previous session left to do. */
  private wrote = false;
  private closed = false;
  /** Why writes are refused (after `refuse()`). */
  private refusal: () => Error = () => closedError(`engine ${this.dir}`);

  constructor(parts: WritePathParts) {
    this.dir = parts.dir;
    this.options = parts.options;
    this.versions = parts.versions;
    this.memtables = parts.memtables;
    this.gate = parts.gate;
    this.background = parts.background;
    this.jobs = parts.jobs;
    this.wal = parts.log && new WalWriter(parts.log, parts.memtables.liveLog, this.onWalError);
    const memtables = parts.memtables;
    this.inserter = insertInto(() => memtables.live);
  }

  /** True when writes go to a WAL (the engine's `wal` option). */
  get logged(): boolean {
    return this.wal !== undefined;
  }

  put(key: Bytes, value: Bytes, sync: boolean | undefined): Promise<void> {
    const b = this.scratch.clear();
    try {
      b.put(key, value);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.apply(b, sync);
  }

  delete(key: Bytes, sync: boolean | undefined): Promise<void> {
    const b = this.scratch.clear();
    try {
      b.del(key);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.apply(b, sync);
  }

  write(ops: readonly WriteOperation[] | WriteBatch, sync: boolean | undefined): Promise<void> {
    if (ops instanceof WriteBatch) return this.apply(ops, sync);
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
    return this.apply(b, sync);
  }

  /** Applies `batch` (see the top of the file); `sync` undefined takes the engine's default. */
  apply(batch: WriteBatch, sync: boolean | undefined): Promise<void> {
    if (this.closed) return Promise.reject(this.refusal());
    if (this.gate.error) return Promise.reject(this.gate.error);
    const count = batch.count;
    if (count === 0) return this.resolved;
    if (!this.wrote) {
      this.wrote = true;
      this.background.maybeScheduleCompaction();
    }
    const memtables = this.memtables;
    if (!memtables.live.hasRoomFor(batch.length, count)) {
      try {
        this.rotate(batch.length, count);
      } catch (err) {
        this.gate.fail(err as Error);
        return Promise.reject(err);
      }
    }
    const seq = this.versions.lastSequence + 1;
    batch.seal(seq);
    this.bytesWritten += batch.length;
    const wal = this.wal;
    if (wal) wal.append(batch.rep, 0, batch.length);
    replayBatch(batch.rep, batch.length, seq, this.inserter, this.cursor, 'write batch', 0);
    this.versions.lastSequence = seq + count - 1;
    if (this.feed.following) this.feed.record(batch.rep, batch.length, seq, count);
    const usage = memtables.live.memoryUsage;
    // The worker threads start once the memtable is a quarter full, so that they have loaded (it takes a while) by
    // the time its flush needs them, and a session that writes little starts none.
    if (!this.poolWarm && usage >= this.options.writeBufferSize / 4) {
      this.poolWarm = true;
      this.jobs.warmUp();
    }
    // As LevelDB, one memtable is flushed at a time: a full live memtable is frozen only once the frozen one is in a
    // table. Until then its writes go on into it (it has room past the write buffer size: that counts its skiplist
    // nodes too) and their promises wait at the gate, so that at most two memtables' WALs are unflushed; a writer that
    // does not wait fills it, and it is frozen when it has no room left (at the top of this method).
    if (usage >= this.options.writeBufferSize && memtables.frozenCount === 0) {
      try {
        this.rotate(0, 0);
      } catch (err) {
        this.gate.fail(err as Error);
      }
    }
    if (wal === undefined) {
      // Without a WAL nothing is durable before close: the write is done once it is in the memtable. A writer
      // awaiting each such write never leaves the microtask queue, so a finished flush (a worker message) would not
      // be seen until writes stall: while background work runs, one write per YIELD_EVERY entries waits a turn.
      this.writesSinceYield += count;
      if (this.writesSinceYield >= YIELD_EVERY && this.background.busy) {
        this.writesSinceYield = 0;
        return this.gate.admit(nextTurn());
      }
      return this.gate.admit(this.resolved);
    }
    // Durable to the level asked: in the OS (the write(2) of this turn returned), or on disk (an fdatasync after it).
    return this.gate.admit((sync ?? this.options.sync) ? wal.waitForSync() : wal.written());
  }

  /**
   * Freezes the live memtable (if it holds anything) with its WAL, starts a new memtable of `capacity` bytes (default
   * `writeBufferSize`), big enough for a batch of `needBytes` and `needEntries`, and, with a WAL, a new WAL, and
   * schedules the flush. Throws EngineError IO if the
   * new WAL cannot be created.
   */
  rotate(needBytes: number, needEntries: number, capacity = this.options.writeBufferSize): void {
    const memtables = this.memtables;
    capacity = Math.max(capacity, Memtable.capacityForBatch(needBytes, needEntries));
    let log = memtables.liveLog;
    if (memtables.live.count > 0 && this.wal) {
      const number = this.versions.newFileNumber();
      const next = new RecordWriter(logFileName(this.dir, number));
      const closing = this.wal;
      const closed = closing.close();
      this.walClosing.add(closed);
      this.walClosingWriters.add(closing);
      void closed.then(() => {
        this.walClosing.delete(closed);
        this.walClosingWriters.delete(closing);
      });
      this.wal = new WalWriter(next, number, this.onWalError, closed);
      log = number;
    }
    memtables.rotate(capacity, log, this.versions.lastSequence + 1);
    this.background.maybeScheduleFlush();
  }

  /**
   * For close, with a WAL: freezes the live memtable (to a new, empty WAL) and schedules its flush when it holds at
   * least a quarter of `writeBufferSize`, the point where the worker threads start anyway, so that the next open
   * replays no large log (about 10 ms per MiB of WAL, at every open, where the flush costs this one close a job on a
   * thread already running). A smaller memtable stays in its WAL. Throws EngineError IO if the new WAL cannot be
   * created.
   */
  freezeForClose(capacity: number): void {
    // Records open left pending are still exactly their log, which the next open reads again: nothing to freeze.
    if (!this.wal || this.memtables.pendingRecords > 0) return;
    if (this.memtables.live.memoryUsage < this.options.writeBufferSize / 4) return;
    this.rotate(0, 0, capacity);
  }

  /** Resolves once every write so far has been handed to the OS (a checkpoint copies the WAL files after it). */
  written(): Promise<void> {
    return this.wal ? this.wal.written() : this.resolved;
  }

  /**
   * Hands the live WAL's pending writes to the OS now, unless it waits for an earlier log's close, and returns the
   * last sequence up to which every write is in the log files: the one before the oldest write still unwritten in
   * any log (the live one, or one closing), or `last` when none is. Logs write in order, and a log writes nothing
   * before the one before it has closed, so the files hold exactly the writes up to it. Without a WAL, 0.
   */
  writtenThrough(last: number): number {
    const wal = this.wal;
    if (!wal) return 0;
    wal.writeNow();
    let first = wal.unwrittenFrom;
    for (const w of this.walClosingWriters) {
      const from = w.unwrittenFrom;
      if (from >= 0 && (first < 0 || from < first)) first = from;
    }
    return first < 0 ? last : first - 1;
  }

  /**
   * Refuses further writes: they reject with `refusal()` (default EngineError CLOSED, for close from its start; a
   * read-only engine's READ_ONLY).
   */
  refuse(refusal?: () => Error): void {
    this.closed = true;
    if (refusal) this.refusal = refusal;
  }

  /**
   * Writes, syncs and closes the live WAL and waits for the rotated ones' final syncs, then lets the followers go.
   * I/O failures went to the gate.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.wal) await this.wal.close();
    await Promise.all([...this.walClosing]);
    this.feed.close();
  }
}
