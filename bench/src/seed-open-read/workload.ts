/**
 * The `seed-open-read` workload, in the child process for one system:
 * - `load`: every document written in batches, then closed; reported as documents/s and the directory's bytes on
 *   disk (`du`). The other phase loads the same data unreported when `load` is not selected.
 * - `open-get-close`: {@link ATTEMPTS} times, open the directory, read document 123456 (the seed's key; the middle
 *   one of a smaller set), close. Reported as min / mean / p99 / max of the whole, as the seed does, and the mean of
 *   each of the three steps, which tells where a system's time goes. Every read is checked against the document.
 */
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { diskUsage } from '../harness/disk-usage.js';
import { reportPeakRss } from '../harness/memory-probe.js';
import { documentBytes, documentKey, documents, probeKeyNumber } from './documents.js';
import { openReadSystem } from './stores.js';
import type { OpenReadSystemName } from './system-names.js';

/** The seed's `@measure(attempts=1000)`. */
export const ATTEMPTS = 1000;

export const openReadWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const system = openReadSystem(ctx.system as OpenReadSystemName);
    const n = ctx.records;
    const ticker = ctx.progress('load', n);
    const t0 = performance.now();
    await system.load(ctx.dataDir, documents(n), (done) => ticker.update(done));
    const loadMs = performance.now() - t0;
    ticker.finish();
    if (ctx.phases.has('load')) {
      ctx.record({ case: 'load', metric: 'docs/s', value: (n * 1000) / loadMs, unit: 'docs/s', better: 'higher' });
      const du = await diskUsage(ctx.dataDir);
      ctx.record({ case: 'disk after load', metric: 'du', value: du, unit: 'B', better: 'lower' });
    }
    if (ctx.phases.has('open-get-close')) await openGetClose(ctx, system, n);
    reportPeakRss(ctx, 'process');
  },
};

async function openGetClose(ctx: RunContext, system: ReturnType<typeof openReadSystem>, n: number): Promise<void> {
  const probe = probeKeyNumber(n);
  const key = documentKey(probe);
  const expected = Buffer.from(documentBytes(n, probe));
  const total = new Float64Array(ATTEMPTS);
  const steps = { open: 0, get: 0, close: 0 };
  const ticker = ctx.progress('open-get-close', ATTEMPTS);
  const writer = await system.holdWriter?.(ctx.dataDir);
  for (let i = 0; i < ATTEMPTS; i++) {
    const t0 = performance.now();
    const reader = await system.open(ctx.dataDir);
    const t1 = performance.now();
    const value = await reader.get(key);
    const t2 = performance.now();
    await reader.close();
    const t3 = performance.now();
    if (value === undefined || !expected.equals(value)) {
      throw new Error(`${ctx.system}: attempt ${i} read a wrong value for document ${probe}`);
    }
    total[i] = t3 - t0;
    steps.open += t1 - t0;
    steps.get += t2 - t1;
    steps.close += t3 - t2;
    if (i % 50 === 0) ticker.update(i);
  }
  await writer?.close();
  ticker.finish();
  total.sort();
  const mean = total.reduce((a, b) => a + b, 0) / ATTEMPTS;
  const p99 = total[Math.min(ATTEMPTS - 1, Math.ceil(ATTEMPTS * 0.99) - 1)]!;
  const whole = 'open + get + close';
  for (const [metric, value] of [
    ['min', total[0]!],
    ['mean', mean],
    ['p99', p99],
    ['max', total[ATTEMPTS - 1]!],
  ] as const) {
    ctx.record({ case: whole, metric, value, unit: 'ms', better: 'lower' });
  }
  for (const [step, sum] of Object.entries(steps)) {
    ctx.record({ case: `${step} (of ${whole})`, metric: 'mean', value: sum / ATTEMPTS, unit: 'ms', better: 'lower' });
  }
}
