/**
 * The `startup` workload (seed 004), in the harness's child process: write the system's data (N listings through
 * OffHeapMap, or into lmdb), close it (for `offheap-crash`, then run a writer on it and kill it), then fork a fresh probe process that times the start and reports memory.
 * The write is not timed; its bytes on disk are reported.
 */
import { join } from 'node:path';
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { diskUsage } from '../harness/disk-usage.js';
import { crashFixture } from './crash-fixture.js';
import { writeEngineFixture, writeLmdbFixture } from './fixtures.js';
import { runProbe } from './probe-process.js';

/** A probe may take this long plus 20 s per million records before it is killed. */
const PROBE_BASE_TIMEOUT_MS = 120_000;
const PROBE_TIMEOUT_MS_PER_RECORD = 0.02;

export const startupWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const dir = join(ctx.dataDir, ctx.system === 'lmdb' ? 'lmdb' : 'engine');
    if (ctx.system === 'lmdb') await writeLmdbFixture(ctx, dir);
    else await writeEngineFixture(ctx, dir);
    const timeoutMs = PROBE_BASE_TIMEOUT_MS + ctx.records * PROBE_TIMEOUT_MS_PER_RECORD;
    if (ctx.system === 'offheap-crash') {
      ctx.progress('crash writer (kill -9)', 1).finish();
      await crashFixture(dir, ctx.records, timeoutMs);
    }
    ctx.record({ case: 'data on disk', metric: 'du', value: await diskUsage(dir), unit: 'B', better: 'lower' });
    ctx.progress(`probe ${ctx.system}`, 1).finish();
    for (const sample of await runProbe(ctx.system, dir, ctx.records, timeoutMs)) ctx.record(sample);
  },
};
