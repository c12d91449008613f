/**
 * Background work (Pebble's compaction.go): flushing frozen memtables to level-0 tables and compacting tables down
 * the levels, one flush loop and one compaction loop at a time, each job run on the worker threads. After each job
 * the change is installed in the manifest, obsolete files are collected and stalled writes let through; the first
 * failure shuts the write gate, and no further job starts.
 *
 * The engine drives it: the write path schedules a flush after freezing a memtable, `flush()` and `compactRange()`
 * wait on it, and close stops it and waits for what runs.
 */
import { closedError, EngineError, ErrorCodes } from '../base/errors.js';
import { TRAILER_SIZE } from '../base/internal-key.js';
import type { ResolvedOptions } from '../base/options.js';
import type { KeyRange } from '../compaction/compaction-job.js';
import { type Compaction, CompactionPicker } from '../compaction/compaction-picker.js';
import type { JobPool } from '../compaction/job-pool.js';
import type { TableBuilderOptions } from '../table/table-builder.js';
import { VersionEdit } from '../version/version-edit.js';
import type { VersionSet } from '../version/version-set.js';
import type { MemtableSet } from '../write/memtables.js';
import { nextTurn, type WriteGate } from '../write/write-gate.js';
import type { ObsoleteFiles } from './obsolete-files.js';
import type { SnapshotList } from './snapshot.js';

/** What background work needs of the engine, each part whole. */
export interface BackgroundParts {
  dir: string;
  options: ResolvedOptions;
  versions: VersionSet;
  memtables: MemtableSet;
  jobs: JobPool;
  snapshots: SnapshotList;
  obsolete: ObsoleteFiles;
  gate: WriteGate;
}

/** What background work has done, for `engine.stats()`. */
export interface BackgroundCounters {
  flushes: number;
  compactions: number;
  trivialMoves: number;
  compactionBytesRead: number;
  compactionBytesWritten: number;
  /** Bytes of the level-0 tables flushes wrote. */
  flushBytesWritten: number;
  /** Wall-clock milliseconds spent in flush and in compaction jobs (worker time, the caller's thread is free). */
  flushMillis: number;
  compactionMillis: number;
}

function userKeyCopy(ikey: Uint8Array): Uint8Array {
  return ikey.slice(0, ikey.length - TRAILER_SIZE);
}

export class BackgroundWork {
  readonly counters: BackgroundCounters = {
    flushes: 0,
    compactions: 0,
    trivialMoves: 0,
    compactionBytesRead: 0,
    compactionBytesWritten: 0,
    flushBytesWritten: 0,
    flushMillis: 0,
    compactionMillis: 0,
  };
  private readonly dir: string;
  private readonly options: ResolvedOptions;
  private readonly versions: VersionSet;
  private readonly memtables: MemtableSet;
  private readonly jobs: JobPool;
  private readonly snapshots: SnapshotList;
  private readonly obsolete: ObsoleteFiles;
  private readonly gate: WriteGate;
  private readonly picker: CompactionPicker;
  private readonly builder: TableBuilderOptions;
  private flushing: Promise<void> | undefined;
  private compacting: Promise<void> | undefined;
  /** A `compactRange` runs: automatic compaction waits. */
  private manual = false;
  /** Set by `stop()`: no compaction starts (flushes still run, so that close can write what has no WAL). */
  private stopped = false;

  constructor(parts: BackgroundParts) {
    this.dir = parts.dir;
    this.options = parts.options;
    this.versions = parts.versions;
    this.memtables = parts.memtables;
    this.jobs = parts.jobs;
    this.snapshots = parts.snapshots;
    this.obsolete = parts.obsolete;
    this.gate = parts.gate;
    this.picker = new CompactionPicker(parts.options);
    this.builder = builderOptions(parts.options);
  }

  /** True while a flush or a compaction runs. */
  get busy(): boolean {
    return this.flushing !== undefined || this.compacting !== undefined;
  }

  /** Starts the flush loop if a frozen memtable waits and none runs. */
  maybeScheduleFlush(): void {
    if (this.flushing || this.memtables.frozenCount === 0 || this.gate.error) return;
    this.flushing = this.flushLoop().finally(() => {
      this.flushing = undefined;
      // A memtable frozen while the loop was ending found it still running and scheduled nothing.
      this.maybeScheduleFlush();
    });
  }

  /** Resolves once no frozen memtable is left; rejects with the background failure if there was one. */
  async waitForFlushes(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.gate.error) throw this.gate.error;
  }

  private async flushLoop(): Promise<void> {
    while (this.memtables.frozenCount > 0 && !this.gate.error) {
      const number = this.versions.newFileNumber();
      this.obsolete.protect(number);
      try {
        const started = performance.now();
        const result = await this.jobs.run({
          kind: 'flush',
          dir: this.dir,
          number,
          memtable: this.memtables.copyOldest(),
          builder: this.builder,
        });
        const edit = new VersionEdit();
        for (const o of result.outputs) edit.addFile(0, o);
        // The oldest WAL still needed: the next frozen memtable's, or the live one's.
        edit.logNumber = this.options.wal ? this.memtables.logAfterOldest() : this.versions.logNumber;
        this.versions.logAndApply(edit);
        this.memtables.retireOldest(result.arenas);
        this.counters.flushes++;
        this.counters.flushMillis += performance.now() - started;
        for (const o of result.outputs) this.counters.flushBytesWritten += o.size;
      } catch (err) {
        this.gate.fail(err as Error);
        return;
      } finally {
        this.obsolete.release(number);
      }
      this.obsolete.collect();
      this.gate.release();
      this.maybeScheduleCompaction();
    }
  }

  /** Starts the compaction loop if some level needs compacting and nothing prevents it. */
  maybeScheduleCompaction(): void {
    if (this.compacting || this.manual || this.gate.error || this.stopped) return;
    if (this.picker.bestScore(this.versions.current).score < 1) return;
    this.compacting = this.compactionLoop().finally(() => {
      this.compacting = undefined;
      // A flush that finished while the loop was ending found it still running and scheduled nothing.
      this.maybeScheduleCompaction();
    });
  }

  private async compactionLoop(): Promise<void> {
    while (!this.gate.error && !this.stopped && !this.manual) {
      const c = this.picker.pick(this.versions.current);
      if (!c) return;
      try {
        await this.runCompaction(c);
      } catch (err) {
        this.gate.fail(err as Error);
        return;
      }
    }
  }

  /**
   * Compacts the tables holding user keys in [begin, end] (undefined: unbounded) down the levels, level by level,
   * while automatic compaction waits. The caller flushed first. Rejects with EngineError CLOSED once stopped, or with
   * the failure, which also shuts the gate.
   */
  async compactRange(begin: Uint8Array | undefined, end: Uint8Array | undefined): Promise<void> {
    while (this.manual) await nextTurn();
    this.manual = true;
    try {
      while (this.compacting) await this.compacting;
      if (this.gate.error) throw this.gate.error;
      const v = this.versions.current;
      let deepest = 0;
      for (let level = 1; level < v.files.length; level++) {
        if (v.overlapping(level, begin, end).length > 0) deepest = level;
      }
      for (let level = 0; level < Math.max(1, deepest) && level < this.options.numLevels - 1; level++) {
        if (this.stopped) throw closedError(`engine ${this.dir}`);
        const c = this.picker.pickRange(this.versions.current, level, begin, end);
        if (c) await this.runCompaction(c);
      }
    } catch (err) {
      if (!(err instanceof EngineError && err.code === ErrorCodes.CLOSED)) this.gate.fail(err as Error);
      throw err;
    } finally {
      this.manual = false;
      this.maybeScheduleCompaction();
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
      this.gate.release();
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
      this.obsolete.protect(n);
    }
    const version = this.versions.current;
    const deeper: KeyRange[][] = [];
    for (let level = out + 1; level < version.files.length; level++) {
      deeper.push(
        version.files[level]!.map((f) => ({ smallest: userKeyCopy(f.smallest), largest: userKeyCopy(f.largest) })),
      );
    }
    try {
      const started = performance.now();
      const result = await this.jobs.run({
        kind: 'compact',
        dir: this.dir,
        inputs: [...c.inputs, ...c.nextInputs].map((f) => f.number),
        outputNumbers,
        deeper,
        smallestSnapshot: this.snapshots.oldest(this.versions.lastSequence),
        expiryFilter: this.options.expiryFilter,
        now: Date.now(),
        targetFileSize: this.options.targetFileSize,
        builder: this.builder,
      });
      for (const f of c.inputs) edit.deleteFile(c.level, f.number);
      for (const f of c.nextInputs) edit.deleteFile(out, f.number);
      for (const o of result.outputs) edit.addFile(out, o);
      this.versions.logAndApply(edit);
      this.counters.compactions++;
      this.counters.compactionBytesRead += result.bytesRead;
      this.counters.compactionBytesWritten += result.bytesWritten;
      this.counters.compactionMillis += performance.now() - started;
    } finally {
      for (const n of outputNumbers) this.obsolete.release(n);
    }
    this.obsolete.collect();
    this.gate.release();
  }

  /** No compaction starts from now on (close). Flushes still run. */
  stop(): void {
    this.stopped = true;
  }

  /** Resolves once no flush or compaction runs (close, after `stop()`). Failures went to the gate. */
  async settle(): Promise<void> {
    while (this.flushing || this.compacting) {
      await this.flushing;
      await this.compacting;
    }
  }
}

/** The table builder's options, from the engine's. */
export function builderOptions(options: ResolvedOptions): TableBuilderOptions {
  return {
    blockSize: options.blockSize,
    restartInterval: options.blockRestartInterval,
    bloomBitsPerKey: options.bloomBitsPerKey,
    compression: options.compression,
    zstdLevel: options.zstdLevel,
  };
}
