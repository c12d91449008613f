/**
 * The `batch` workload, in the harness's child process. It writes the same records (the `server` benchmark's keys,
 * `key:<12 digits>` drawn at random among N, and its 100-byte values) in groups of {@link GROUP}, each group awaited
 * until durable (in the WAL), two ways:
 *
 * - single: the map's `setBytes` 1,000 times then `durable()`; the server's `set` 1,000 times pipelined in one
 *   frame (the `server` benchmark's `set depth 1000`), every reply awaited;
 * - batch: one `map.batch()` of 1,000 `setBytes` and its `write()`; one KV `batch` call of 1,000 sets.
 *
 * The two alternate in rounds on the same map or server for the whole measurement ({@link interleave}), so that the
 * noise of a shared machine falls on both alike and their ratio (a row of its own) means something in one run. The
 * map is a persisted OffHeapMap in this process; the server a `heapless serve --data` child on a fresh directory,
 * driven by the typed client over one WebSocket.
 */
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import type { KvBatchOp } from '@heapless/client';
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { hundredByteValue, MEASURE_MS, WARMUP_MS } from '../server/cases.js';
import { startHeaplessServe } from '../server/heapless-serve.js';
import { KeyPool } from '../server/key-pool.js';
import { ProcessGroup } from '../server/process-group.js';

/** Records per group: a batch large enough that its per-write savings show over the per-batch cost. */
const GROUP = 1000;
/** Groups each way per round: long enough to amortize the switch, short enough to interleave many times. */
const GROUPS_PER_ROUND = 5;

/** Writes one group of {@link GROUP} records and resolves once it is durable. */
type Group = () => Promise<void>;

export const batchWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    if (ctx.system !== 'heapless') throw new Error(`batch has no system '${ctx.system}'`);
    if (ctx.phases.has('map')) await runMap(ctx);
    if (ctx.phases.has('server')) await runServer(ctx);
  },
};

/**
 * Alternates rounds of `single` and `batch` (which goes first swaps each round) for {@link WARMUP_MS}, then for
 * {@link MEASURE_MS} while timing each; reports records/s of both and their ratio under `label`.
 */
async function interleave(ctx: RunContext, label: string, single: Group, batch: Group): Promise<void> {
  ctx.progress(label, 1).finish();
  const spent = { single: 0, batch: 0 };
  const groups = { single: 0, batch: 0 };
  const warmupEnd = performance.now() + WARMUP_MS;
  let measureEnd = Number.POSITIVE_INFINITY;
  for (let round = 0; performance.now() < measureEnd; round++) {
    const measuring = performance.now() >= warmupEnd;
    if (measuring && measureEnd === Number.POSITIVE_INFINITY) measureEnd = performance.now() + MEASURE_MS;
    const order = round % 2 === 0 ? (['single', 'batch'] as const) : (['batch', 'single'] as const);
    for (const way of order) {
      const write = way === 'single' ? single : batch;
      const t0 = performance.now();
      for (let i = 0; i < GROUPS_PER_ROUND; i++) await write();
      if (measuring) {
        spent[way] += performance.now() - t0;
        groups[way] += GROUPS_PER_ROUND;
      }
    }
  }
  const rate = (way: 'single' | 'batch') => (groups[way] * GROUP * 1000) / spent[way];
  ctx.record({
    case: `${label}, one by one`,
    metric: 'records/s',
    value: rate('single'),
    unit: 'ops/s',
    better: 'higher',
  });
  ctx.record({
    case: `${label}, one batch`,
    metric: 'records/s',
    value: rate('batch'),
    unit: 'ops/s',
    better: 'higher',
  });
  ctx.record({
    case: `${label}, batch ÷ one by one`,
    metric: 'ratio',
    value: rate('batch') / rate('single'),
    unit: '×',
    better: 'higher',
  });
}

async function runMap(ctx: RunContext): Promise<void> {
  const { OffHeapMap } = await import('@heapless/offheap');
  const map = await OffHeapMap.open<string, unknown>({ dir: join(ctx.dataDir, 'map'), threads: 1 });
  try {
    const keys = new KeyPool(ctx.records);
    const value = hundredByteValue();
    await interleave(
      ctx,
      'map: 1,000 writes',
      async () => {
        for (let i = 0; i < GROUP; i++) map.setBytes(keys.next(), value);
        await map.durable();
      },
      async () => {
        const b = map.batch();
        for (let i = 0; i < GROUP; i++) b.setBytes(keys.next(), value);
        await b.write();
      },
    );
  } finally {
    await map.close();
  }
}

async function runServer(ctx: RunContext): Promise<void> {
  const { connect } = await import('@heapless/client');
  const group = new ProcessGroup();
  try {
    const { server, url } = await startHeaplessServe(group, join(ctx.dataDir, 'server'), { readyTimeoutMs: 60_000 });
    const kv = await connect<typeof KvActor>(url, { reconnect: false });
    try {
      const keys = new KeyPool(ctx.records);
      const value = hundredByteValue();
      await interleave(
        ctx,
        'server: 1,000 writes over one WebSocket',
        async () => {
          const calls = new Array<Promise<void>>(GROUP);
          for (let i = 0; i < GROUP; i++) calls[i] = kv.set(keys.next(), value);
          await Promise.all(calls);
        },
        async () => {
          const ops = new Array<KvBatchOp>(GROUP);
          for (let i = 0; i < GROUP; i++) ops[i] = { type: 'set', key: keys.next(), value };
          await kv.batch(ops);
        },
      );
    } finally {
      await kv.close();
    }
    await group.stop(server);
  } finally {
    await group.close();
  }
}
