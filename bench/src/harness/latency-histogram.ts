/**
 * Latency percentiles for any benchmark, recorded in an HDR histogram (hdr-histogram-js) at 3 significant digits
 * so that p99.9 of a million samples costs a few kilobytes rather than a sorted array of a million numbers.
 *
 * Values are recorded in nanoseconds (integers, as HDR requires) and reported in microseconds.
 */
import { build, type Histogram } from 'hdr-histogram-js';
import type { RunContext } from './benchmark.js';

/** Percentiles reported by {@link LatencyRecorder.report}. */
export const REPORTED_PERCENTILES: readonly { readonly metric: string; readonly percentile: number }[] = [
  { metric: 'p50', percentile: 50 },
  { metric: 'p99', percentile: 99 },
  { metric: 'p99.9', percentile: 99.9 },
];

/** Collects per-operation latencies of one case. */
export class LatencyRecorder {
  private readonly histogram: Histogram;

  constructor() {
    // 1 ns resolution up to one minute; autoResize is off so recording never allocates.
    this.histogram = build({
      lowestDiscernibleValue: 1,
      highestTrackableValue: 60e9,
      numberOfSignificantValueDigits: 3,
    });
  }

  /** Starts timing one operation; pass the result to {@link stop}. */
  start(): bigint {
    return process.hrtime.bigint();
  }

  /** Records the time since `started` (from {@link start}). */
  stop(started: bigint): void {
    this.histogram.recordValue(Number(process.hrtime.bigint() - started));
  }

  /** Records one latency given in nanoseconds. */
  recordNanoseconds(ns: number): void {
    this.histogram.recordValue(Math.max(0, Math.round(ns)));
  }

  /** Number of recorded operations. */
  get count(): number {
    return this.histogram.totalCount;
  }

  /** The latency at `percentile` (0–100), in microseconds. */
  percentileMicros(percentile: number): number {
    return this.histogram.getValueAtPercentile(percentile) / 1000;
  }

  /** Reports p50, p99, p99.9 and max of `caseName` in µs (lower is better). */
  report(ctx: RunContext, caseName: string): void {
    for (const { metric, percentile } of REPORTED_PERCENTILES) {
      ctx.record({ case: caseName, metric, value: this.percentileMicros(percentile), unit: 'µs', better: 'lower' });
    }
    ctx.record({ case: caseName, metric: 'max', value: this.histogram.maxValue / 1000, unit: 'µs', better: 'lower' });
  }

  /** Frees the histogram's memory (WASM-backed histograms need it; the JS one is collected anyway). */
  destroy(): void {
    this.histogram.destroy();
  }
}
