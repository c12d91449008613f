/**
 * The worker threads that run flushes and compactions: a piscina pool (at most two threads) of the CommonJS entry
 * compaction-worker-entry.cts, which loads the ES job module asynchronously so that a thread may be terminated at
 * any moment of its start (see that file: terminating one inside require(esm) aborts the process).
 *
 * The pool starts lazily: a new JobPool has no thread; `warmUp()` (the engine calls it once the memtable is a quarter
 * full, so that the threads have loaded by the time its flush needs them) or the first `run()` starts it, so that a
 * session that writes little starts none.
 *
 * Ownership: the caller must `close()` a pool; close leaves no thread running, even one still starting.
 */
import type { Piscina } from 'piscina';
import { CorruptionError, closedError, EngineError, ErrorCodes, isErrorCode } from '../base/errors.js';
import type { JobResult, JobTask } from './compaction-job.js';
import type { JobFailure, JobOutcome } from './compaction-worker.js';

/** The module each thread loads: always the built one (in `dist/`, also when this file runs from src/ in unit tests). */
export const WORKER_ENTRY = new URL('../../dist/compaction/compaction-worker-entry.cjs', import.meta.url);

export class JobPool {
  private starting: Promise<Piscina> | undefined;
  private pool: Piscina | undefined;
  private closing: Promise<void> | undefined;

  /** Starts the pool if it is not started yet: imports piscina, and the first thread starts loading at once. */
  warmUp(): void {
    if (this.closing) return;
    void this.start().catch(() => {
      // Reported by the run() that needs the pool.
    });
  }

  private start(): Promise<Piscina> {
    this.starting ??= import('piscina').then(({ Piscina: Pool }) => {
      const pool = new Pool({ filename: WORKER_ENTRY.href, minThreads: 1, maxThreads: 2, idleTimeout: 60_000 });
      this.pool = pool;
      return pool;
    });
    return this.starting;
  }

  /**
   * Runs `task` on a thread and resolves to its result. A flush's memtable copy is moved to the thread, not cloned.
   * Rejects with the job's error rebuilt as the engine's typed error (CorruptionError, EngineError IO...), with
   * EngineError CLOSED after `close()`, or as piscina does (a thread crashed).
   */
  async run(task: JobTask): Promise<JobResult> {
    if (this.closing) throw closedError('the job pool');
    const pool = await this.start();
    const transferList = task.kind === 'flush' ? [task.memtable.bytes, task.memtable.nodes] : undefined;
    const outcome = (await pool.run(task, { transferList })) as JobOutcome;
    if (!outcome.ok) throw rebuildJobError(outcome.reason);
    return outcome.result;
  }

  /** Threads the pool has now (loading, idle or busy); 0 before it starts and once closing. */
  get threads(): number {
    return this.closing === undefined && this.pool !== undefined ? this.pool.threads.length : 0;
  }

  /** Terminates every thread (the caller first waits for the jobs it started). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const starting = this.starting;
      if (starting === undefined) return;
      const pool = await starting.catch(() => undefined);
      await pool?.destroy();
    })();
    return this.closing;
  }
}

/** Turns an error a worker returned as data back into the engine's typed error. */
export function rebuildJobError(e: JobFailure): Error {
  if (e.code === ErrorCodes.CORRUPTION && e.file !== undefined) {
    const what = e.message.replace(/^corruption in .* at offset \d+: /, '');
    return new CorruptionError(e.file, e.offset ?? 0, what);
  }
  if (isErrorCode(e.code)) return new EngineError(e.code, e.message);
  return new EngineError(ErrorCodes.IO, `background job failed: ${e.message}`);
}
