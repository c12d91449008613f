/**
 * Heap used, array buffers and RSS of the probe process once its data is loaded, after two forced full GCs (the
 * probe runs with `--expose-gc`), so that garbage of the load does not count as what the loaded data costs.
 */
import type { Sample } from '../../harness/benchmark.js';
import { memorySnapshot } from '../../harness/memory-probe.js';
import { MEMORY_CASE } from '../probe-messages.js';

/** Collects twice, then returns rows `heap-used`, `array-buffers` and `rss` of {@link MEMORY_CASE}. */
export function memorySamples(): Sample[] {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the startup probe must run with --expose-gc');
  gc();
  gc();
  const m = memorySnapshot();
  const row = (metric: string, value: number): Sample => ({
    case: MEMORY_CASE,
    metric,
    value,
    unit: 'B',
    better: 'lower',
  });
  return [row('heap-used', m.heapUsed), row('array-buffers', m.arrayBuffers), row('rss', m.rss)];
}

/** A time row (ms, lower is better). */
export function timeSample(caseName: string, ms: number): Sample {
  return { case: caseName, metric: 'time', value: ms, unit: 'ms', better: 'lower' };
}
