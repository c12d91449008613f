/**
 * Memory and GC figures of the current process, for benchmarks that compare what systems cost the heap
 * (gc-pressure) and as a footnote of every other one.
 *
 * - {@link memorySnapshot}: heap used, external, array buffers and RSS at one moment (`process.memoryUsage()`).
 * - {@link GcMonitor}: every GC pause the process takes while it watches (perf_hooks 'gc' entries): count, total and
 *   longest pause, so that "pauses during load" can be told apart from the heap size afterwards.
 * - {@link timeFullGc}: the time of one forced full collection; needs the child started with `--expose-gc` (set
 *   `execArgv` in the benchmark's definition).
 */
import { type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import type { RunContext } from './benchmark.js';

/** Memory of the process at one moment, in bytes. */
export interface MemorySnapshot {
  readonly heapUsed: number;
  readonly heapTotal: number;
  /** Memory of C++ objects bound to JS objects, including array buffers. */
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rss: number;
}

/** Reads the process's memory now. */
export function memorySnapshot(): MemorySnapshot {
  const m = process.memoryUsage();
  return {
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    rss: m.rss,
  };
}

/** Reports a snapshot as rows `heap-used`, `external`, `array-buffers`, `rss` of `caseName` (bytes, lower is better). */
export function reportMemory(ctx: RunContext, caseName: string, snapshot: MemorySnapshot): void {
  const rows: [string, number][] = [
    ['heap-used', snapshot.heapUsed],
    ['external', snapshot.external],
    ['array-buffers', snapshot.arrayBuffers],
    ['rss', snapshot.rss],
  ];
  for (const [metric, value] of rows) ctx.record({ case: caseName, metric, value, unit: 'B', better: 'lower' });
}

/** Reports the process's peak RSS so far (`process.resourceUsage().maxRSS`) as `max-rss` of `caseName`. */
export function reportPeakRss(ctx: RunContext, caseName: string): void {
  const value = process.resourceUsage().maxRSS * 1024;
  ctx.record({ case: caseName, metric: 'max-rss', value, unit: 'B', better: 'lower' });
}

/** GC pauses seen between {@link GcMonitor.start} and {@link GcMonitor.stop}. */
export interface GcPauses {
  readonly count: number;
  /** Sum of pause durations, ms. */
  readonly totalMs: number;
  /** Longest single pause, ms. */
  readonly maxMs: number;
}

/**
 * Watches GC pauses. Node creates 'gc' performance entries in an immediate after each collection and hands them to
 * observers later still, so a synchronous loop sees none until it yields: {@link stop} yields, then takes whatever
 * is still buffered (`takeRecords`) before disconnecting, so no pause of the watched interval is lost. Call
 * {@link settleGcEntries} before {@link start} so that entries of earlier collections are not counted.
 */
export class GcMonitor {
  private count = 0;
  private totalMs = 0;
  private maxMs = 0;
  private readonly observer = new PerformanceObserver((list) => this.add(list.getEntries()));

  private add(entries: readonly PerformanceEntry[]): void {
    for (const entry of entries) {
      this.count++;
      this.totalMs += entry.duration;
      if (entry.duration > this.maxMs) this.maxMs = entry.duration;
    }
  }

  /** Begins counting; returns `this`. */
  start(): this {
    this.observer.observe({ entryTypes: ['gc'] });
    return this;
  }

  /** Stops counting and returns the pauses seen. */
  async stop(): Promise<GcPauses> {
    await settleGcEntries();
    this.add(this.observer.takeRecords());
    this.observer.disconnect();
    return { count: this.count, totalMs: this.totalMs, maxMs: this.maxMs };
  }
}

/** Lets Node turn the collections that already happened into performance entries (two event-loop turns). */
export async function settleGcEntries(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/** Reports pauses as rows `gc-count`, `gc-pause-total` and `gc-pause-max` of `caseName` (lower is better). */
export function reportGcPauses(ctx: RunContext, caseName: string, pauses: GcPauses): void {
  ctx.record({ case: caseName, metric: 'gc-count', value: pauses.count, unit: 'count', better: 'lower' });
  ctx.record({ case: caseName, metric: 'gc-pause-total', value: pauses.totalMs, unit: 'ms', better: 'lower' });
  ctx.record({ case: caseName, metric: 'gc-pause-max', value: pauses.maxMs, unit: 'ms', better: 'lower' });
}

/**
 * Runs one forced full GC and returns its duration in ms. Throws when the process was not started with
 * `--expose-gc`.
 */
export function timeFullGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('timeFullGc() needs the child process started with --expose-gc');
  const started = performance.now();
  gc();
  return performance.now() - started;
}
