/**
 * `heapless`: a real `heapless serve` child process (packages/actor/dist/cli.js) on a data directory preloaded
 * with N keys, measured from this process by the typed client over one WebSocket (`get`/`set` at each depth) and
 * by autocannon over HTTP (`GET /v1/kv/:key`, the stored bytes as `application/octet-stream`). `heapless-tcp`:
 * the same server and cases with the typed client over its raw TCP port (`--tcp-port`, `tcp://`) instead.
 *
 * The data directory is written before the server starts, through `OffHeapMap.open({ dir })` (what the server
 * itself opens), so the server starts the way it restarts in production: loading from local disk. Its background
 * flushes and compactions of the preload are over before the first case; the `set` cases pay for the WAL and
 * whatever flushes they cause, as a user's writes do (redis-server runs with persistence off).
 */
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import type { RunContext } from '../harness/benchmark.js';
import { fillOffHeapMap } from '../offheap-fixture.js';
import { DEPTHS, HTTP_CASE, hundredByteValue, keyOf, kvCaseName, SEED_003_GETS_PER_SECOND } from './cases.js';
import { freePort, LOOPBACK } from './free-port.js';
import { startHeaplessServe } from './heapless-serve.js';
import { measureHttpGet } from './http-load.js';
import { KeyPool } from './key-pool.js';
import { type BatchRunner, measureBatches, reportCase } from './pipelined-loop.js';
import type { ProcessGroup } from './process-group.js';
import { runScanCases } from './scan-cases.js';
import { reportServerRss } from './server-rss.js';

/** Upper bound on the server's start: it loads N records before it listens (seconds per million on this machine). */
const READY_TIMEOUT_MS = 300_000;

/**
 * Preloads, starts the server, runs every case; the server is stopped by the group on every path. `compression`
 * (default: the engine's) is used by the preload and passed to `serve`, so every table is written with it.
 */
export async function runHeapless(ctx: RunContext, group: ProcessGroup, compression?: 'none'): Promise<void> {
  const dataDir = join(ctx.dataDir, 'heapless');
  await preload(ctx, dataDir, compression);
  const serveFlags = compression === undefined ? [] : ['--compression', compression];
  const { server, port } = await startHeaplessServe(group, dataDir, {
    flags: serveFlags,
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  await reportServerRss(ctx, server.pid, 'server after preload');
  const url = `ws://${LOOPBACK}:${port}/v1/ws`;
  // Reads first: the HTTP read runs before the set cases, so that it does not measure the engine's flushes and
  // compactions of what they wrote (redis-server, with persistence off, has none; the preload's are over by now).
  if (ctx.phases.has('kv')) await runKvCases(ctx, url, 'get');
  if (ctx.phases.has('http')) {
    ctx.progress(HTTP_CASE, 1).finish();
    reportCase(ctx, HTTP_CASE, await measureHttpGet(port, ctx.records));
  }
  // Scans read the engine's tables: before the sets, whose flushes and compactions would be measured too.
  if (ctx.phases.has('scan')) await runScanCases(ctx, url, ctx.records);
  if (ctx.phases.has('kv')) await runKvCases(ctx, url, 'set');
  await reportServerRss(ctx, server.pid, 'server at the end');
  await group.stop(server);
}

/**
 * The key-value cases of {@link runHeapless} over the server's raw TCP port: the same frames without the
 * WebSocket's framing and masking. The HTTP and scan phases are the WebSocket system's only.
 */
export async function runHeaplessTcp(ctx: RunContext, group: ProcessGroup): Promise<void> {
  if (!ctx.phases.has('kv')) return;
  const dataDir = join(ctx.dataDir, 'heapless-tcp');
  await preload(ctx, dataDir, undefined);
  const tcpPort = await freePort();
  const { server } = await startHeaplessServe(group, dataDir, {
    flags: ['--tcp-port', String(tcpPort)],
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  await reportServerRss(ctx, server.pid, 'server after preload');
  const url = `tcp://${LOOPBACK}:${tcpPort}`;
  await runKvCases(ctx, url, 'get');
  await runKvCases(ctx, url, 'set');
  await reportServerRss(ctx, server.pid, 'server at the end');
  await group.stop(server);
}

/** `get` or `set` at every depth through the typed client over one connection to `url` (WebSocket or TCP). */
async function runKvCases(ctx: RunContext, url: string, operation: 'get' | 'set'): Promise<void> {
  const kv = await connect<typeof KvActor>(url, { reconnect: false });
  try {
    const keys = new KeyPool(ctx.records);
    const value = hundredByteValue();
    const get: BatchRunner = async (depth) => {
      if (depth === 1) {
        if ((await kv.get(keys.next())) === undefined) throw new Error('heapless: a preloaded key was not found');
        return;
      }
      const calls = new Array<Promise<Uint8Array | undefined>>(depth);
      for (let i = 0; i < depth; i++) calls[i] = kv.get(keys.next());
      for (const found of await Promise.all(calls)) {
        if (found === undefined) throw new Error('heapless: a preloaded key was not found');
      }
    };
    const set: BatchRunner = async (depth) => {
      if (depth === 1) return kv.set(keys.next(), value);
      const calls = new Array<Promise<void>>(depth);
      for (let i = 0; i < depth; i++) calls[i] = kv.set(keys.next(), value);
      await Promise.all(calls);
    };
    if (operation === 'get') {
      for (const depth of DEPTHS) {
        const label = kvCaseName('get', depth);
        ctx.progress(label, 1).finish();
        const result = await measureBatches(get, depth);
        reportCase(ctx, label, result);
        ctx.record({
          case: label,
          metric: '÷ seed 003 (280k/s)',
          value: result.opsPerSecond / SEED_003_GETS_PER_SECOND,
          unit: '×',
          better: 'higher',
        });
      }
      return;
    }
    for (const depth of DEPTHS) {
      const label = kvCaseName('set', depth);
      ctx.progress(label, 1).finish();
      reportCase(ctx, label, await measureBatches(set, depth));
    }
  } finally {
    await kv.close();
  }
}

/** Writes `key:<i>` → the 100-byte value for every i < N through the map the server will open. */
async function preload(ctx: RunContext, dir: string, compression: 'none' | undefined): Promise<void> {
  const value = hundredByteValue();
  await fillOffHeapMap(ctx, dir, 'preload', (map, i) => map.setBytes(keyOf(i), value), compression && { compression });
}
