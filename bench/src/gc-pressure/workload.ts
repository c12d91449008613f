/**
 * The `gc-pressure` workload, run in the child process for one system (phases in `phases.ts`). The child is started
 * with `--expose-gc`, so full collections can be forced and timed.
 */
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import {
  GcMonitor,
  memorySnapshot,
  reportGcPauses,
  reportMemory,
  settleGcEntries,
  timeFullGc,
} from '../harness/memory-probe.js';
import { Xorshift32 } from '../harness/xorshift32.js';
import { loadUserStoreFactory } from './systems/index.js';
import { makeUser, userKey } from './user.js';
import { type UserStore, WRITE_WINDOW } from './user-store.js';

/** Seeds of the random sequences; fixed so every system touches the same users in the same order. */
const GET_SEED = 0x6c0ffee;
const UPDATE_SEED = 0x0bad5eed;

export const gcPressureWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const open = await loadUserStoreFactory(ctx.system);
    timeFullGc(); // start from a collected heap, so "during load" counts only the load's garbage
    const store = await open(ctx.dataDir);
    try {
      await load(ctx, store);
      if (ctx.phases.has('get')) await getRandom(ctx, store);
      if (ctx.phases.has('get-field')) await getFieldRandom(ctx, store);
      if (ctx.phases.has('scan')) await scan(ctx, store);
      if (ctx.phases.has('update')) await update(ctx, store);
    } finally {
      await store.close();
    }
  },
};

function reportRate(ctx: RunContext, caseName: string, count: number, ms: number): void {
  ctx.record({ case: caseName, metric: 'ops/s', value: (count * 1000) / ms, unit: 'ops/s', better: 'higher' });
}

function reportLongestWrite(ctx: RunContext, caseName: string, ms: number): void {
  ctx.record({ case: caseName, metric: 'longest set', value: ms, unit: 'ms', better: 'lower' });
}

/** Writes users `[0, n)` (or random existing ones for updates), waiting for asynchronous stores every window. */
async function writeUsers(
  ctx: RunContext,
  store: UserStore,
  label: string,
  pick: (i: number) => number,
  ageBump: number,
) {
  const n = ctx.records;
  const ticker = ctx.progress(label, n);
  await settleGcEntries();
  const monitor = new GcMonitor().start();
  const started = performance.now();
  let pending: Promise<unknown> | undefined;
  // The longest gap between two consecutive writes returning: a write plus building its user, and any GC pause or
  // index growth step it ran into (for lmdb also the wait for its batch every WRITE_WINDOW writes). One clock read
  // per write keeps the cost of measuring small and equal for every system.
  let longest = 0;
  let last = started;
  for (let i = 0; i < n; i++) {
    const id = pick(i);
    pending = store.set(userKey(id), makeUser(id, ageBump));
    if (pending !== undefined && i % WRITE_WINDOW === WRITE_WINDOW - 1) await pending;
    const now = performance.now();
    if (now - last > longest) longest = now - last;
    last = now;
    ticker.update(i);
  }
  if (pending !== undefined) await pending;
  const ms = performance.now() - started;
  const pauses = await monitor.stop();
  ticker.finish();
  return { ms, pauses, longest };
}

async function load(ctx: RunContext, store: UserStore): Promise<void> {
  const { ms, pauses, longest } = await writeUsers(ctx, store, 'load', (i) => i, 0);
  if (!ctx.phases.has('load')) return;
  reportRate(ctx, 'load', ctx.records, ms);
  reportLongestWrite(ctx, 'load', longest);
  reportGcPauses(ctx, 'load', pauses);
  timeFullGc();
  timeFullGc();
  reportMemory(ctx, 'after load', memorySnapshot());
  ctx.record({ case: 'full gc', metric: 'time', value: timeFullGc(), unit: 'ms', better: 'lower' });
}

async function getRandom(ctx: RunContext, store: UserStore): Promise<void> {
  const n = ctx.records;
  const random = new Xorshift32(GET_SEED);
  const ticker = ctx.progress('get', n);
  let ages = 0;
  let misses = 0;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const user = store.get(userKey(random.below(n)));
    if (user === undefined) misses++;
    else ages += user.age;
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  if (misses > 0 || ages === 0) throw new Error(`get: ${misses} of ${n} users missing`);
  reportRate(ctx, 'get', n, ms);
}

async function getFieldRandom(ctx: RunContext, store: UserStore): Promise<void> {
  const n = ctx.records;
  const random = new Xorshift32(GET_SEED);
  const ticker = ctx.progress('get-field', n);
  let ages = 0;
  let misses = 0;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const age = store.getAge(userKey(random.below(n)));
    if (age === undefined) misses++;
    else ages += age;
    ticker.update(i);
  }
  const ms = performance.now() - started;
  ticker.finish();
  if (misses > 0 || ages === 0) throw new Error(`get-field: ${misses} of ${n} users missing`);
  reportRate(ctx, 'get-field', n, ms);
}

/** Age threshold of the scan: about half the users pass it. */
const SCAN_MIN_AGE = 50;
const SCAN_REPEATS = 3;

/** How many of users `[0, n)` are at least `minAge`: what every scan must count. */
export function usersAtLeast(n: number, minAge: number): number {
  let count = 0;
  for (let i = 0; i < n; i++) if (makeUser(i).age >= minAge) count++;
  return count;
}

async function scan(ctx: RunContext, store: UserStore): Promise<void> {
  const expected = usersAtLeast(ctx.records, SCAN_MIN_AGE);
  const warm = store.countOlder(SCAN_MIN_AGE); // warm-up
  if (warm !== expected)
    throw new Error(`scan: counted ${warm} users of at least ${SCAN_MIN_AGE}, expected ${expected}`);
  const single = await timeScans(ctx, 'scan', async () => store.countOlder(SCAN_MIN_AGE), expected);
  reportRate(ctx, 'scan', ctx.records, single);
  if (store.countOlderParallel === undefined) return;
  const parallel = store.countOlderParallel.bind(store);
  if ((await parallel(SCAN_MIN_AGE)) !== expected) throw new Error('scan (parallel): wrong count');
  reportRate(ctx, 'scan (parallel)', ctx.records, await timeScans(ctx, 'scan (parallel)', parallel, expected));
}

/** Median ms of {@link SCAN_REPEATS} timed passes; each must count `expected`. */
async function timeScans(
  ctx: RunContext,
  label: string,
  pass: (minAge: number) => Promise<number>,
  expected: number,
): Promise<number> {
  const ticker = ctx.progress(label, SCAN_REPEATS);
  const times: number[] = [];
  for (let i = 0; i < SCAN_REPEATS; i++) {
    const started = performance.now();
    const n = await pass(SCAN_MIN_AGE);
    times.push(performance.now() - started);
    if (n !== expected) throw new Error(`${label}: counted ${n}, expected ${expected}`);
    ticker.update(i + 1);
  }
  ticker.finish();
  return times.sort((a, b) => a - b)[SCAN_REPEATS >> 1]!;
}

async function update(ctx: RunContext, store: UserStore): Promise<void> {
  const random = new Xorshift32(UPDATE_SEED);
  const n = ctx.records;
  const { ms, pauses, longest } = await writeUsers(ctx, store, 'update', () => random.below(n), 1);
  reportRate(ctx, 'update', n, ms);
  reportLongestWrite(ctx, 'update', longest);
  reportGcPauses(ctx, 'update', pauses);
  const probe = store.get(userKey(0));
  if (probe === undefined || probe.id !== 0) throw new Error('update: user 0 lost');
}
