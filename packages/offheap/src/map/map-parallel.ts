/**
 * The map's worker pool and the parallel reads run on it (`scan`, `filter`, `getMany`): each task carries a handle
 * of its own from `share()`, and the worker reads through an attached reader (shared/parallel-worker.ts).
 */
import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { invalidArgument, isOffHeapErrorCode, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import type { ParallelResult, ParallelTask, WorkerFunction } from '../shared/parallel-task.js';
import type { SharedMapHandle } from '../shared/shared-handle.js';
import type { MapIndex } from './map-index.js';
import type { MapSharing } from './map-sharing.js';

/** The most partitions a scan may ask for: each is a task with a map handle of its own. */
const MAX_PARTITIONS = 1 << 20;

export class MapParallel {
  /** Started on first use: a map that never runs a parallel read starts no thread. */
  private pool: Piscina | null = null;

  constructor(
    /** Worker threads of the pool. */
    readonly threads: number,
    private readonly sharing: MapSharing,
    private readonly index: MapIndex,
  ) {}

  /**
   * Runs `fn` over every partition of the index (the tables as they are now, about `partitions` slices of them) and
   * resolves to the results in partition order. The index does not drain its old table meanwhile.
   */
  async run(op: 'scan' | 'filter', fn: WorkerFunction, partitions: number): Promise<unknown[]> {
    const given = fn as Partial<WorkerFunction> | null;
    if (typeof given?.module !== 'string' && !(given?.module instanceof URL)) {
      throw invalidArgument(`${op}: { module } must name the worker module (a path, or a file: or data: URL)`);
    }
    if (given.name !== undefined && typeof given.name !== 'string') {
      throw invalidArgument(`${op}: { name } must be the name of an export of the module`);
    }
    if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
      throw invalidArgument(`${op}: partitions must be an integer from 1 to ${MAX_PARTITIONS}, not ${partitions}`);
    }
    // A URL (file:, data:) as it is; anything else is a path.
    const module =
      fn.module instanceof URL
        ? fn.module.href
        : /^[a-z][a-z0-9+.-]+:/i.test(fn.module)
          ? fn.module
          : pathToFileURL(fn.module).href;
    const pool = this.workerPool();
    const tables = this.index.tables();
    const total = tables.reduce((n, t) => n + t.capacity, 0);
    const per = Math.max(1024, Math.ceil(total / Math.max(1, partitions)));
    const runs: Promise<unknown>[] = [];
    this.index.pins++;
    try {
      for (const t of tables) {
        for (let from = 0; from < t.capacity; from += per) {
          const handle = this.sharing.share();
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
      this.index.pins--;
    }
  }

  /** The values of `keys` (undefined where absent), looked up in `threads` chunks in parallel. */
  async getMany(keys: readonly unknown[]): Promise<unknown[]> {
    if (keys.length === 0) return [];
    const pool = this.workerPool();
    const chunk = Math.ceil(keys.length / this.threads);
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < keys.length; i += chunk) {
      const handle = this.sharing.share();
      const task: ParallelTask = { op: 'getMany', handle, keys: keys.slice(i, i + chunk) };
      runs.push(this.runTask(pool, task, handle));
    }
    return ((await settleAll(runs)) as unknown[][]).flat();
  }

  /** Ends the pool's threads (waiting for them to exit). */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool !== null) await pool.destroy();
  }

  private workerPool(): Piscina {
    if (this.pool === null) {
      this.pool = new Piscina({
        filename: new URL('../../dist/shared/parallel-worker.js', import.meta.url).href,
        minThreads: this.threads,
        maxThreads: this.threads,
      });
    }
    return this.pool;
  }

  /** One task's value; a worker's error comes back with its own code if it has one of ours, else WORKER_FAILED. */
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
