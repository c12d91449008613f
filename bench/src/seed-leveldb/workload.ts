/**
 * The `seed-leveldb` workload, run in the child process for one system (see `phases.ts` for what each phase does).
 *
 * Every phase is timed as a whole with `performance.now()` and reported as operations per second; keys and values
 * are built inside the timed loop, as the seed does, so every system pays the same string work.
 */
import { join } from 'node:path';
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { diskUsage } from '../harness/disk-usage.js';
import { LatencyRecorder } from '../harness/latency-histogram.js';
import { reportPeakRss } from '../harness/memory-probe.js';
import { Xorshift32 } from '../harness/xorshift32.js';
import { PHASES_ON_LOADED_STORE, SYNC_PUTS } from './phases.js';
import type { SeedStore, SeedSystem } from './seed-store.js';
import { loadSeedSystem } from './systems/index.js';

/** Seed of the random-get sequence; fixed so that every system reads the same keys in the same order. */
const RANDOM_SEED = 0x5eed_0000;

export const seedWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const system = await loadSeedSystem(ctx.system);
    const needsLoad = [...ctx.phases].some((phase) => PHASES_ON_LOADED_STORE.has(phase));
    if (needsLoad) await runLoadedStorePhases(ctx, system);
    for (const size of [100, 1000]) {
      if (ctx.phases.has(`batch-${size}`)) await runBatchPhase(ctx, system, size);
    }
    if (ctx.phases.has('put-sync') && system.persistent) await runSyncPhase(ctx, system);
    reportPeakRss(ctx, 'process');
  },
};

/** Reports `count` operations done in `ms` milliseconds as ops/s of `caseName`. */
function reportRate(ctx: RunContext, caseName: string, count: number, ms: number): void {
  ctx.record({ case: caseName, metric: 'ops/s', value: (count * 1000) / ms, unit: 'ops/s', better: 'higher' });
}

async function reportDisk(ctx: RunContext, system: SeedSystem, caseName: string, dir: string): Promise<void> {
  if (!system.persistent) return;
  ctx.record({ case: caseName, metric: 'du', value: await diskUsage(dir), unit: 'B', better: 'lower' });
}

/** put → gets → scan → delete on one store, each phase reported only if selected. */
async function runLoadedStorePhases(ctx: RunContext, system: SeedSystem): Promise<void> {
  const n = ctx.records;
  const dir = join(ctx.dataDir, 'load');
  const store = await system.open(dir, { durable: false });
  try {
    const loadMs = await putOneByOne(ctx, store, n);
    if (ctx.phases.has('put')) {
      reportRate(ctx, 'put', n, loadMs);
      await reportDisk(ctx, system, 'disk after put', dir);
    }
    if (ctx.phases.has('get-seq')) {
      reportRate(ctx, 'get-seq', n, await getSequential(ctx, 'get-seq', n, store.get.bind(store)));
      if (store.getSync)
        reportRate(ctx, 'get-seq (getSync)', n, await getSequential(ctx, 'get-seq (getSync)', n, store.getSync));
    }
    if (ctx.phases.has('get-random')) {
      reportRate(ctx, 'get-random', n, await getRandom(ctx, 'get-random', n, store.get.bind(store)));
      if (store.getSync)
        reportRate(ctx, 'get-random (getSync)', n, await getRandom(ctx, 'get-random (getSync)', n, store.getSync));
    }
    if (ctx.phases.has('get-missing')) {
      reportRate(ctx, 'get-missing', n, await getMissing(ctx, 'get-missing', n, store.get.bind(store)));
      if (store.getSync)
        reportRate(ctx, 'get-missing (getSync)', n, await getMissing(ctx, 'get-missing (getSync)', n, store.getSync));
    }
    if (ctx.phases.has('scan')) reportRate(ctx, 'scan', n, await scan(ctx, store, n));
    if (ctx.phases.has('delete')) {
      reportRate(ctx, 'delete', n, await deleteOneByOne(ctx, store, n));
      await reportDisk(ctx, system, 'disk after delete', dir);
    }
  } finally {
    await store.close();
  }
}

async function putOneByOne(ctx: RunContext, store: SeedStore, n: number): Promise<number> {
  const ticker = ctx.progress('put', n);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const pending = store.put(`key${i}`, `value${i}`);
    if (pending !== undefined) await pending;
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  return ms;
}

type Getter = (key: string) => Promise<string | undefined> | string | undefined;

async function getSequential(ctx: RunContext, label: string, n: number, get: Getter): Promise<number> {
  const ticker = ctx.progress(label, n);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    let value = get(`key${i}`);
    if (typeof value === 'object') value = await value;
    if (value !== `value${i}`) throw new Error(`${label}: key${i} read ${JSON.stringify(value)}, wrote value${i}`);
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  return ms;
}

async function getRandom(ctx: RunContext, label: string, n: number, get: Getter): Promise<number> {
  const ticker = ctx.progress(label, n);
  const random = new Xorshift32(RANDOM_SEED);
  let misses = 0;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    let value = get(`key${random.below(n)}`);
    if (typeof value === 'object') value = await value;
    if (value === undefined) misses++;
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  if (misses > 0) throw new Error(`${label}: ${misses} of ${n} existing keys were not found`);
  return ms;
}

async function getMissing(ctx: RunContext, label: string, n: number, get: Getter): Promise<number> {
  const ticker = ctx.progress(label, n);
  let hits = 0;
  const started = performance.now();
  for (let i = n; i < 2 * n; i++) {
    let value = get(`key${i}`);
    if (typeof value === 'object') value = await value;
    if (value !== undefined) hits++;
    ticker.update(i - n);
  }
  const ms = performance.now() - started;
  ticker.finish();
  if (hits > 0) throw new Error(`${label}: ${hits} of ${n} absent keys were found`);
  return ms;
}

async function scan(ctx: RunContext, store: SeedStore, n: number): Promise<number> {
  const ticker = ctx.progress('scan', n);
  const started = performance.now();
  let count = store.scan();
  if (typeof count === 'object') count = await count;
  const ms = performance.now() - started;
  ticker.finish();
  if (count !== n) throw new Error(`scan: visited ${count} entries, expected ${n}`);
  return ms;
}

async function deleteOneByOne(ctx: RunContext, store: SeedStore, n: number): Promise<number> {
  const ticker = ctx.progress('delete', n);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const pending = store.delete(`key${i}`);
    if (pending !== undefined) await pending;
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  return ms;
}

/** N puts in batches of `size` into a fresh store; verifies a sample afterwards so a no-op batch cannot pass. */
async function runBatchPhase(ctx: RunContext, system: SeedSystem, size: number): Promise<void> {
  const n = ctx.records;
  const label = `batch-${size}`;
  const store = await system.open(join(ctx.dataDir, label), { durable: false });
  try {
    const ticker = ctx.progress(label, n);
    const keys: string[] = [];
    const values: string[] = [];
    const started = performance.now();
    for (let first = 0; first < n; first += size) {
      const end = Math.min(n, first + size);
      keys.length = 0;
      values.length = 0;
      for (let i = first; i < end; i++) {
        keys.push(`key${i}`);
        values.push(`value${i}`);
      }
      const pending = store.putBatch(keys, values);
      if (pending !== undefined) await pending;
      ticker.update(end);
    }
    const ms = performance.now() - started;
    ticker.finish();
    await verifySample(label, store, n);
    reportRate(ctx, label, n, ms);
  } finally {
    await store.close();
  }
}

/** min(N, 20,000) fsynced puts into a fresh store, with per-put latency. */
async function runSyncPhase(ctx: RunContext, system: SeedSystem): Promise<void> {
  const n = Math.min(ctx.records, SYNC_PUTS);
  const store = await system.open(join(ctx.dataDir, 'put-sync'), { durable: true });
  try {
    const putDurable = store.putDurable;
    if (putDurable === undefined) throw new Error(`${ctx.system} is persistent but has no durable put`);
    const ticker = ctx.progress('put-sync', n);
    const latency = new LatencyRecorder();
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const t0 = latency.start();
      const pending = putDurable(`key${i}`, `value${i}`);
      if (pending !== undefined) await pending;
      latency.stop(t0);
      ticker.update(i);
    }
    const ms = performance.now() - started;
    ticker.finish();
    await verifySample('put-sync', store, n);
    reportRate(ctx, 'put-sync', n, ms);
    latency.report(ctx, 'put-sync');
    latency.destroy();
  } finally {
    await store.close();
  }
}

/** Reads the first, middle and last key written by a phase. */
async function verifySample(label: string, store: SeedStore, n: number): Promise<void> {
  for (const i of [0, n >> 1, n - 1]) {
    const value = await store.get(`key${i}`);
    if (value !== `value${i}`) throw new Error(`${label}: key${i} read ${JSON.stringify(value)} after the phase`);
  }
}
