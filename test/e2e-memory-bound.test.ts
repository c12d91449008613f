// Issue 11 §2: a client that pipelines gets of large values and never reads its socket must not pin the server's
// memory. `heapless serve` runs as a child so that its RSS is its own.
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import { pack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { clientFrame, tcp, until, upgradeRequest } from './raw-socket.js';
import { type Child, sample, startServe } from './serve-child.js';

const VALUE = 256 * 1024;
const KEYS = 64;
const CALLS = 4096;
/** Growth of the server's RSS allowed while the client does not read: the 1 MiB reply cap, one reply, GC slack. */
const RSS_BOUND = 64 * 1024 * 1024;

let child: Child | undefined;
afterAll(() => {
  child?.proc.kill('SIGKILL');
});

async function metrics(c: Child): Promise<string> {
  return `\n${await (await fetch(`${c.httpUrl}/metrics`)).text()}`;
}

describe('memory under a client that never reads', () => {
  it(`keeps the server's RSS within ${RSS_BOUND >> 20} MiB of where it was, and serves the other clients`, async () => {
    child = await startServe(['--memory']);
    const port = Number(new URL(child.httpUrl).port);
    const kv = await connect<typeof KvActor>(child.url, { timeoutMs: 20_000 });
    const value = pack(new Uint8Array(VALUE - 8));
    await Promise.all(Array.from({ length: KEYS }, (_, i) => kv.set(`big:${i}`, value)));
    await kv.set('small', pack('x'));
    // Warm the allocator with the same traffic, read this time, before taking the baseline.
    for (let round = 0; round < 4; round++) {
      await Promise.all(Array.from({ length: KEYS }, (_, i) => kv.get(`big:${i}`)));
    }
    const before = sample(await metrics(child), 'heapless_memory_bytes{kind="rss"}');

    const socket = await tcp(port);
    socket.pause(); // never reads, not even the handshake's answer
    socket.write(upgradeRequest('127.0.0.1', port, '/v1/ws'));
    for (let f = 0; f < CALLS / 256; f++) {
      const calls = Array.from({ length: 256 }, (_, i) => [f * 256 + i + 1, 'get', [`big:${(f * 256 + i) % KEYS}`]]);
      socket.write(clientFrame(pack(calls)));
    }
    // Wait until the server has stopped answering that client: the count of gets stays put (a wait, not a speed
    // assertion).
    let last = -1;
    await until(
      async () => {
        const gets = sample(await metrics(child!), 'heapless_calls_total{method="get",outcome="ok"}');
        const settled = gets === last;
        last = gets;
        return settled;
      },
      'the server stops answering the client that does not read',
      60_000,
      500,
    );
    const m = await metrics(child);
    const grown = sample(m, 'heapless_memory_bytes{kind="rss"}') - before;

    // Another client's calls go on being answered, well within their timeout.
    const latencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await (i % 10 === 0 ? kv.get(`big:${i % KEYS}`) : kv.get('small'));
      latencies.push(performance.now() - t0);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB (from ${(before / 2 ** 20).toFixed(0)} MiB) with a client that` +
        ` never reads ${CALLS} gets of ${VALUE >> 10} KiB; ${last} gets answered; another client's p99` +
        ` ${latencies[Math.floor(latencies.length * 0.99)].toFixed(2)} ms`,
    );
    expect(grown).toBeLessThan(RSS_BOUND);
    expect(sample(m, 'heapless_ws_paused_connections')).toBe(1);
    expect(sample(m, 'heapless_ws_reply_bytes')).toBeLessThanOrEqual(1024 * 1024 + VALUE + 64);
    socket.destroy();
    await kv.close();
  });
});
