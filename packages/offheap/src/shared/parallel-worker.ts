/**
 * The piscina worker module behind `map.scan`, `map.filter` and `map.getMany`: attaches to the map's shared memory
 * with the task's handle, does the task through an `OffHeapMapReader`, detaches. Scan and filter functions come
 * from the user's module, imported by URL (Node caches the import, so it loads once per worker thread).
 */
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { OffHeapMapReader } from './offheap-reader.js';
import type { ParallelResult, ParallelTask } from './parallel-task.js';
import type { ScanCursor } from './record-cursor.js';

type ScanFunction = (cursor: ScanCursor<unknown, unknown>, arg: unknown) => unknown;
type Predicate = (value: unknown, key: unknown, arg: unknown) => boolean;

/**
 * Errors come back as data: structured cloning keeps an Error's message but not its class or `code`, and the
 * map must hand its caller the stable code (a missing export is INVALID_ARGUMENT, not a worker crash).
 */
export default async function run(task: ParallelTask): Promise<ParallelResult> {
  try {
    return { ok: true, value: await perform(task) };
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    return {
      ok: false,
      code: typeof code === 'string' ? code : null,
      message: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? (err.stack ?? '') : '',
    };
  }
}

/**
 * The reader this thread keeps between tasks. A pool belongs to one map (the map creates it and destroys it on
 * close), so a thread serves one map: attaching once keeps msgpackr's generated record readers and the JIT's work
 * across tasks instead of starting cold on every partition. A task's handle for the same map only brings a port
 * this thread does not need, which it closes (the owner then stops posting to it).
 */
let kept: OffHeapMapReader<string, unknown> | null = null;

function readerFor(handle: ParallelTask['handle']): OffHeapMapReader<string, unknown> {
  if (kept !== null && kept.mapId === handle.id && !kept.closed) {
    handle.port.close();
    return kept;
  }
  if (kept !== null) kept.close();
  kept = OffHeapMapReader.attach<string, unknown>(handle);
  return kept;
}

async function perform(task: ParallelTask): Promise<unknown> {
  const reader = readerFor(task.handle);
  if (task.op === 'getMany') {
    const out: unknown[] = [];
    for (const k of task.keys) out.push(reader.get(k as string));
    return out;
  }
  const mod = (await import(task.module)) as Record<string, unknown>;
  const fn = mod[task.name];
  if (typeof fn !== 'function') {
    throw new OffHeapError(
      OffHeapErrorCodes.INVALID_ARGUMENT,
      `module ${task.module} has no function export named ${task.name}`,
    );
  }
  const cursor = reader.cursor(task.table, task.capacity, task.from, task.to);
  if (task.op === 'scan') return (fn as ScanFunction)(cursor, task.arg);
  const out: [unknown, unknown][] = [];
  const pred = fn as Predicate;
  while (cursor.next()) {
    const value = cursor.value;
    const key = cursor.key;
    if (pred(value, key, task.arg)) out.push([key, value]);
  }
  return out;
}
