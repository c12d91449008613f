/**
 * The `write` phase of the `follower` system: end-to-end write latency through the log (client → following
 * server → JetStream ack → applied on that server → reply) beside a direct local write (client → `heapless serve
 * --data` → WAL → reply), both real `heapless serve` children measured by the typed client over one WebSocket with
 * the server benchmark's closed loop (batches of `depth` sets, each awaited whole), at depth 1 and 16. Cases
 * `set through the log depth D` and `set local depth D`: ops/s, p50 and p99 (µs), and their p50 ratio.
 */
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import type { RunContext } from '../harness/benchmark.js';
import { hundredByteValue } from '../server/cases.js';
import { startHeaplessServe } from '../server/heapless-serve.js';
import { measureBatches, reportCase } from '../server/pipelined-loop.js';
import type { ProcessGroup } from '../server/process-group.js';

const DEPTHS = [1, 16] as const;
/** The stream the following server writes through (not the start phase's). */
const WRITE_STREAM = 'bench-writes';
const READY_TIMEOUT_MS = 60_000;

export async function writeLatencyPhase(ctx: RunContext, group: ProcessGroup, natsUrl: string): Promise<void> {
  const p50 = new Map<string, number>();
  for (const mode of ['log', 'local'] as const) {
    const dir = join(ctx.dataDir, `serve-${mode}`);
    const follow = mode === 'log' ? ['--follow', natsUrl, '--stream', WRITE_STREAM] : [];
    const { server, url } = await startHeaplessServe(group, dir, {
      flags: follow,
      readyTimeoutMs: READY_TIMEOUT_MS,
      name: `heapless serve (${mode})`,
    });
    const kv = await connect<typeof KvActor>(url, { reconnect: false });
    try {
      const value = hundredByteValue();
      let i = 0;
      for (const depth of DEPTHS) {
        const name = `set ${mode === 'log' ? 'through the log' : 'local'} depth ${depth}`;
        const ticker = ctx.progress(name, 1);
        const result = await measureBatches(async (d) => {
          const calls = new Array<Promise<unknown>>(d);
          for (let j = 0; j < d; j++) calls[j] = kv.set(`w${i++ % ctx.records}`, value);
          await Promise.all(calls);
        }, depth);
        ticker.finish();
        reportCase(ctx, name, result);
        p50.set(`${mode} ${depth}`, result.p50);
      }
    } finally {
      kv.close();
      await group.stop(server);
    }
  }
  for (const depth of DEPTHS)
    ctx.record({
      case: `set through the log ÷ local, depth ${depth}`,
      metric: 'p50 ratio',
      value: p50.get(`log ${depth}`)! / p50.get(`local ${depth}`)!,
      unit: '×',
      better: 'lower',
    });
}
