/**
 * WAL retention: keeping the write-ahead logs that hold writes a consumer has not taken in yet, after their data is
 * in tables (RocksDB keeps WALs for `GetUpdatesSince` the same way, while a consumer needs them). The consumer — a
 * map whose image is of sequence S — pins the engine's writes after a sequence; a log whose data is in tables (its
 * number below the manifest's `logNumber`) is deleted only once every write in it is at or below the pin. Without a
 * pin, logs go as soon as their data is in tables.
 *
 * A log's writes are known by its first batch's sequence (FORMAT.md "Write batch"): logs are written in number
 * order with rising sequences, so every write of log L is below the first sequence of the next log that holds any.
 * The pin is not persisted: the consumer gives it at each open (`EngineOptions.retainWalAfter`, before recovery's
 * first pass over obsolete files) and moves it with `Engine.retainWalAfter`.
 *
 * Beside the pin, a size budget (`EngineOptions.walRetentionBytes`, RocksDB's `WAL_size_limit_MB`) keeps the newest
 * logs whose data is in tables while their sizes add up to at most the budget, for consumers that hold no pin: a
 * watcher that ended and resumes from its last sequence a moment later.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { logFileName } from '../base/filenames.js';
import { HEADER_SIZE, RecordType } from '../record/record-format.js';
import { BATCH_HEADER_SIZE, batchSequence } from './write-batch.js';

export class WalRetention {
  /** Writes with a sequence above this are kept in their logs; undefined: no pin. */
  private after: number | undefined;
  /** First sequence of each log read so far (logs below the live one never change). */
  private readonly firstSequences = new Map<number, number>();
  /** Sizes of the logs below the live one (which never change), by number. */
  private readonly sizes = new Map<number, number>();
  private readonly scratch = Buffer.alloc(HEADER_SIZE + BATCH_HEADER_SIZE);

  /** `budget`: bytes of logs whose data is in tables kept whatever the pin (0: none). */
  constructor(
    private readonly dir: string,
    after: number | undefined,
    private readonly budget = 0,
  ) {
    this.after = after;
  }

  /** The pin: writes after this sequence are retained (undefined: none). */
  get pin(): number | undefined {
    return this.after;
  }

  /** Moves (or with undefined, drops) the pin; the next pass over obsolete files deletes what it no longer keeps. */
  set(after: number | undefined): void {
    this.after = after;
  }

  /**
   * The lowest log number to keep among `logs` (log numbers found in the directory): every log below it holds only
   * writes at or below the pin. Infinity when nothing is pinned, or when no log reaches back to the pin (the writes
   * after it are gone already: keeping the rest would not bring them back).
   */
  keepFrom(logs: readonly number[]): number {
    const after = this.after;
    if (after === undefined) return Number.POSITIVE_INFINITY;
    let keep = Number.POSITIVE_INFINITY;
    for (const n of logs) {
      const first = this.firstSequence(n);
      // The newest log starting at or before the pin's next write holds it (or the pin is past all writes so far).
      if (first !== undefined && first <= after + 1 && (keep === Number.POSITIVE_INFINITY || n > keep)) keep = n;
    }
    return keep;
  }

  /**
   * The lowest log number the size budget keeps among `logs` (log numbers found in the directory) below `logNumber`
   * (the oldest log whose data is not in tables yet): the newest of them whose sizes add up to at most the budget.
   * Infinity when the budget is 0 or the newest such log alone exceeds it.
   */
  keepBySizeFrom(logs: readonly number[], logNumber: number): number {
    if (this.budget <= 0) return Number.POSITIVE_INFINITY;
    const older = logs.filter((n) => n < logNumber).sort((a, b) => b - a);
    let keep = Number.POSITIVE_INFINITY;
    let total = 0;
    for (const n of older) {
      const size = this.sizeOf(n);
      if (size === undefined) continue;
      total += size;
      if (total > this.budget) break;
      keep = n;
    }
    return keep;
  }

  private sizeOf(n: number): number | undefined {
    const known = this.sizes.get(n);
    if (known !== undefined) return known;
    try {
      const size = statSync(logFileName(this.dir, n)).size;
      this.sizes.set(n, size);
      return size;
    } catch {
      return undefined;
    }
  }

  /**
   * The sequence of log `n`'s first batch, read from its first fragment (at offset 0 of its first block, a FULL or
   * FIRST fragment whose payload starts with the batch header); undefined for an empty or unreadable log.
   */
  firstSequence(n: number): number | undefined {
    const known = this.firstSequences.get(n);
    if (known !== undefined) return known;
    let fd: number;
    try {
      fd = openSync(logFileName(this.dir, n), 'r');
    } catch {
      return undefined;
    }
    try {
      const b = this.scratch;
      if (readSync(fd, b, 0, b.length, 0) < b.length) return undefined;
      const type = b[6];
      if ((type !== RecordType.Full && type !== RecordType.First) || b.readUInt16LE(4) < BATCH_HEADER_SIZE) {
        return undefined;
      }
      const seq = batchSequence(b.subarray(HEADER_SIZE));
      this.firstSequences.set(n, seq);
      return seq;
    } finally {
      closeSync(fd);
    }
  }

  /** Forgets a deleted log. */
  forget(n: number): void {
    this.firstSequences.delete(n);
    this.sizes.delete(n);
  }
}
