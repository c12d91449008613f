/**
 * Quick measurement, not a test: pipelined `get` and `set` of 100-byte values through the typed client over one
 * WebSocket to `heapless serve --memory` in another process, at depths 1, 16 and 1000, in ops/s.
 *
 *   npx tsc -p packages/actor/tsconfig.bench.json && node packages/actor/dist/bench/cli/server.bench.js [SECONDS]
 *
 * The comparison with redis-server and a bare fastify route is `pnpm bench server`.
 */
import { spawn } from 'node:child_process';
import { connect } from '@heapless/client';
import type { KvActor } from '../kv/kv-actor.js';

const seconds = Number(process.argv[2] ?? 3);
const KEYS = 10_000;
// dist/bench/cli/server.bench.js -> dist/cli.js, the command as the main build made it.
const cli = new URL('../../cli.js', import.meta.url);
const server = spawn(process.execPath, [cli.pathname, 'serve', '--memory', '--port', '0'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve, reject) => {
  let buf = '';
  server.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const m = /"url":"([^"]+)"/.exec(buf);
    if (m !== null) resolve(m[1]);
  });
  server.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});
const kv = await connect<typeof KvActor>(url);
const value = new Uint8Array(100).fill(7);
for (let i = 0; i < KEYS; i += 1000) {
  await Promise.all(Array.from({ length: 1000 }, (_, j) => kv.set(`k${i + j}`, value)));
}

async function measure(op: 'get' | 'set', depth: number): Promise<number> {
  const call = op === 'get' ? (i: number) => kv.get(`k${i % KEYS}`) : (i: number) => kv.set(`k${i % KEYS}`, value);
  const batch: Promise<unknown>[] = new Array(depth);
  const run = async (ms: number) => {
    let ops = 0;
    const end = performance.now() + ms;
    while (performance.now() < end) {
      for (let i = 0; i < depth; i++) batch[i] = call(ops + i);
      await Promise.all(batch);
      ops += depth;
    }
    return ops;
  };
  await run(300); // warm-up
  const t0 = performance.now();
  const ops = await run(seconds * 1000);
  return ops / ((performance.now() - t0) / 1000);
}

console.log('op   depth       ops/s');
for (const op of ['get', 'set'] as const) {
  for (const depth of [1, 16, 1000]) {
    const rate = await measure(op, depth);
    console.log(`${op}  ${String(depth).padStart(5)}  ${Math.round(rate).toLocaleString('en').padStart(10)}`);
  }
}
await kv.close();
server.kill('SIGTERM');
