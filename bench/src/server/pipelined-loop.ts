/**
 * The measuring loop of every key-value case run from Node (heapless's typed client, ioredis): batches of `depth`
 * calls, each batch sent at once and awaited as a whole, for a fixed time after a warm-up. This is the closed loop
 * of `redis-benchmark -P depth` on one connection, so the three clients are measured the same way.
 *
 * Latency: each call of a batch is counted with the batch's round trip (first call sent → last reply in), so at
 * depth 1 it is the call's own latency and at depth 1000 it is what a caller of a 1000-call batch waits.
 */
import type { RunContext } from '../harness/benchmark.js';
import { LatencyRecorder } from '../harness/latency-histogram.js';
import { MEASURE_MS, WARMUP_MS } from './cases.js';

/** Sends `depth` calls at once and resolves when every reply is in; rejects if any call failed. */
export type BatchRunner = (depth: number) => Promise<void>;

/** Upper bound on the operations of one case, whatever the clock says (a broken no-op client cannot spin forever). */
const MAX_OPS = 100_000_000;

/** What one case measured. */
export interface CaseResult {
  readonly opsPerSecond: number;
  /** Microseconds. */
  readonly p50: number;
  readonly p99: number;
}

/** Runs `runBatch` at `depth` for {@link WARMUP_MS}, then measures it for {@link MEASURE_MS}. */
export async function measureBatches(runBatch: BatchRunner, depth: number): Promise<CaseResult> {
  const warmupEnd = performance.now() + WARMUP_MS;
  for (let ops = 0; ops < MAX_OPS && performance.now() < warmupEnd; ops += depth) await runBatch(depth);

  const latency = new LatencyRecorder();
  try {
    let ops = 0;
    const started = performance.now();
    const end = started + MEASURE_MS;
    let now = started;
    while (ops < MAX_OPS && now < end) {
      const t0 = process.hrtime.bigint();
      await runBatch(depth);
      const ns = Number(process.hrtime.bigint() - t0);
      for (let i = 0; i < depth; i++) latency.recordNanoseconds(ns);
      ops += depth;
      now = performance.now();
    }
    return {
      opsPerSecond: (ops * 1000) / (now - started),
      p50: latency.percentileMicros(50),
      p99: latency.percentileMicros(99),
    };
  } finally {
    latency.destroy();
  }
}

/** Reports a case as rows `ops/s`, `p50` and `p99` (µs). */
export function reportCase(ctx: RunContext, caseName: string, result: CaseResult): void {
  ctx.record({ case: caseName, metric: 'ops/s', value: result.opsPerSecond, unit: 'ops/s', better: 'higher' });
  ctx.record({ case: caseName, metric: 'p50', value: result.p50, unit: 'µs', better: 'lower' });
  ctx.record({ case: caseName, metric: 'p99', value: result.p99, unit: 'µs', better: 'lower' });
}
