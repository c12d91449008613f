/**
 * The worker threads that run flushes and compactions: a piscina pool (at most two threads) of the CommonJS entry
 * compaction-worker-entry.cts, which loads the ES job module asynchronously so that a thread may be terminated at
 * any moment of its start (see that file: terminating one inside require(esm) aborts the process).
 *
 * Ownership: `JobPool.start` returns a pool the caller must `close()`; close leaves no thread running.
 */
import type { Piscina } from 'piscina';
import type { JobResult, JobTask } from './compaction-job.js';
import type { JobError } from './compaction-worker.js';

/** The module each thread loads: always the built one (in `dist/`, also when this file runs from src/ in unit tests). */
export const WORKER_ENTRY = new URL('../../dist/compaction/compaction-worker-entry.cjs', import.meta.url);

export class JobPool {
  private readonly pool: Piscina;
  private closing: Promise<void> | undefined;

  private constructor(pool: Piscina) {
    this.pool = pool;
  }

  /** Imports piscina and starts the pool (its first thread starts loading at once). */
  static async start(): Promise<JobPool> {
    const { Piscina: Pool } = await import('piscina');
    return new JobPool(new Pool({ filename: WORKER_ENTRY.href, minThreads: 1, maxThreads: 2, idleTimeout: 60_000 }));
  }

  /** Runs `task` on a thread; `transferList` buffers are moved to it. Rejects as piscina does (a thread crashed). */
  run(task: JobTask, transferList?: ArrayBuffer[]): Promise<JobResult | JobError> {
    return this.pool.run(task, { transferList }) as Promise<JobResult | JobError>;
  }

  /** Threads the pool has now (loading, idle or busy); 0 once closing. */
  get threads(): number {
    return this.closing === undefined ? this.pool.threads.length : 0;
  }

  /** Terminates every thread (the caller first waits for the jobs it started). Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.pool.destroy();
    return this.closing;
  }
}
