/**
 * The job module of the worker threads: runs flush and compaction jobs (compaction-job.ts) off the event loop. Loaded
 * asynchronously by compaction-worker-entry.cts (see job-pool.ts for why). Errors are returned as plain data, because
 * structured cloning drops the class and the `code`, `file` and `offset` of an EngineError; the engine rebuilds them
 * (see `rebuildJobError` in job-pool.ts).
 */

import { move, transferableSymbol, valueSymbol } from 'piscina';
import { CorruptionError, EngineError } from '../base/errors.js';
import { type JobResult, type JobTask, runJob } from './compaction-job.js';

/** Why a job failed, as plain data: the error's class name, its engine code, message, and a corruption's place. */
export interface JobFailure {
  name: string;
  code?: string;
  message: string;
  file?: string;
  offset?: number;
}

/** What a thread answers for a job. */
export type JobOutcome = { ok: true; result: JobResult } | { ok: false; reason: JobFailure };

export default function work(task: JobTask): JobOutcome {
  try {
    const result = runJob(task);
    if (task.kind !== 'flush') return { ok: true, result };
    // The memtable copy is done with: move its buffers back (no clone) so that the next flush's copy reuses them.
    const arenas = { bytes: task.memtable.bytes, nodes: task.memtable.nodes };
    return move({
      get [transferableSymbol]() {
        return [arenas.bytes, arenas.nodes];
      },
      get [valueSymbol]() {
        return { ok: true, result: { ...result, arenas } };
      },
    }) as unknown as JobOutcome;
  } catch (err) {
    const e = err as Error;
    if (e instanceof CorruptionError) {
      return { ok: false, reason: { name: e.name, code: e.code, message: e.message, file: e.file, offset: e.offset } };
    }
    if (e instanceof EngineError) return { ok: false, reason: { name: e.name, code: e.code, message: e.message } };
    return { ok: false, reason: { name: e.name ?? 'Error', message: String(e.message ?? e) } };
  }
}
