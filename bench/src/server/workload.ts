/**
 * The `server` workload, run in the harness's child process, which is the client side: it starts the server under
 * test as a process of its own (through a {@link ProcessGroup}, which stops it on every path, Ctrl-C included),
 * drives it over loopback and reports. Each system's module is imported only when chosen.
 */
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { ProcessGroup } from './process-group.js';

type SystemRunner = (ctx: RunContext, group: ProcessGroup) => Promise<void>;

const runners: Readonly<Record<string, () => Promise<SystemRunner>>> = {
  heapless: async () => (await import('./heapless-system.js')).runHeapless,
  // The server with uncompressed tables (what it wrote before snappy became the engine's default): the cost of the
  // codec on the server's writes, side by side with `heapless`.
  'heapless-none': async () => {
    const { runHeapless } = await import('./heapless-system.js');
    return (ctx, group) => runHeapless(ctx, group, 'none');
  },
  // The same server and key-value cases over its raw TCP port (`--tcp-port`), beside the WebSocket's.
  'heapless-tcp': async () => (await import('./heapless-system.js')).runHeaplessTcp,
  anchor: async () => (await import('./anchor-system.js')).runAnchor,
  'redis-benchmark': async () => (await import('./redis-benchmark-system.js')).runRedisBenchmark,
};

export const serverWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const load = Object.hasOwn(runners, ctx.system) ? runners[ctx.system] : undefined;
    if (load === undefined) throw new Error(`server has no system '${ctx.system}'`);
    const runSystem = await load();
    const group = new ProcessGroup();
    try {
      await runSystem(ctx, group);
    } finally {
      await group.close();
    }
  },
};
