// What watchers cost the server, measured as the RSS of a real `heapless serve` child: a watcher that keeps up costs
// nothing that grows with the writes; watchers that do not read, over WebSocket on many distinct prefixes or as
// Server-Sent Events under large batches, hold about their bound each (maxWatchBytes, 1 MiB), not copies per round.
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import { pack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { clientFrame, tcp, upgradeRequest } from './raw-socket.js';
import { type Child, sample, startServe } from './serve-child.js';

const MiB = 2 ** 20;
/** The documented bound of one watch (DEFAULT_MAX_WATCH_BYTES) and of the hub's backlog (BACKLOG_BYTES). */
const WATCH_BOUND = 1 * MiB;
const BACKLOG = 16 * MiB;
/** What the allocator, the engine's memtable and the GC may add under the same writes with no watcher at all. */
const SLACK = 48 * MiB;

let child: Child | undefined;
const dirs: string[] = [];
afterEach(() => {
  child?.proc.kill('SIGKILL');
  child = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A server on a fresh data directory (watches need a persisted store); the one `afterEach` kills. */
async function serve(): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-watch-memory-'));
  dirs.push(dir);
  child = await startServe(['--data', dir]);
  return child;
}

async function rss(c: Child): Promise<number> {
  const text = await (await fetch(`${c.httpUrl}/metrics`)).text();
  return sample(`\n${text}`, 'heapless_memory_bytes{kind="rss"}');
}

/** A WebSocket peer by hand that opens `prefixes.length` watches and never reads a byte. */
async function silentWatcher(port: number, prefixes: string[]) {
  const socket = await tcp(port);
  socket.pause();
  socket.write(upgradeRequest('127.0.0.1', port, '/v1/ws'));
  socket.write(clientFrame(pack(prefixes.map((p, i) => [i + 1, 'watch', [p, {}]]))));
  return socket;
}

describe('the memory watchers cost a server', () => {
  it('does not grow with the writes under a watcher that keeps up', async () => {
    const child = await serve();
    const kv = await connect<typeof KvActor>(child.url);
    const watcher = await connect<typeof KvActor>(child.url);
    let seen = 0;
    const reading = (async () => {
      for await (const _ of watcher.watch('c:')) if (++seen === 20_000) break;
    })();
    const value = pack({ n: 1 });
    // Warm up, then measure: depth-1 writes, each its own round of one change.
    for (let i = 0; i < 2000; i++) await kv.set(`c:${i}`, value);
    const before = await rss(child);
    for (let i = 2000; i < 20_000; i++) await kv.set(`c:${i}`, value);
    await reading;
    const grown = (await rss(child)) - before;
    console.log(`one watcher that keeps up, 18k writes: RSS grew ${(grown / MiB).toFixed(1)} MiB`);
    expect(seen).toBe(20_000);
    // Before pages, each round kept its own 4 KiB list in the backlog: ~7 KiB a write, +130 MiB here.
    expect(grown).toBeLessThan(BACKLOG + SLACK);
    await watcher.close();
    await kv.close();
  }, 120_000);

  it('holds about its bound per watcher that does not read, on 100 distinct prefixes', async () => {
    const child = await serve();
    const port = Number(new URL(child.httpUrl).port);
    const kv = await connect<typeof KvActor>(child.url);
    const before = await rss(child);
    const prefixes = Array.from({ length: 100 }, (_, i) => 'p'.repeat(i + 1));
    const sockets = [await silentWatcher(port, prefixes.slice(0, 50)), await silentWatcher(port, prefixes.slice(50))];
    // Keys under 1 to 100 of the prefixes in turn, one write at a time: each round is one change, which every watch of
    // a prefix it is under is offered.
    const value = pack('v'.repeat(100));
    for (let i = 0; i < 20_000; i++) await kv.set(`${'p'.repeat((i % 100) + 1)}:${i}`, value);
    const grown = (await rss(child)) - before;
    console.log(`100 watchers that do not read, distinct prefixes: RSS grew ${(grown / MiB).toFixed(1)} MiB`);
    // Before, each prefix's copy of each round was its own 4 KiB list, held by the socket: ~N GiB here.
    // The messages in flight are JS objects (ws frames, write requests: ~700 bytes each, counted in each watcher's
    // bound), and after such a peak V8 keeps its heap's free space: 61 MiB of it on Node 24 (heap total 134 MiB, used
    // 73). Twice the slack for it.
    expect(grown).toBeLessThan(100 * WATCH_BOUND + BACKLOG + 2 * SLACK);
    for (const s of sockets) s.destroy();
    await kv.close();
  }, 180_000);

  it('holds about its bound per Server-Sent-Events watcher that does not read, under 14 MiB batches', async () => {
    // 14 MiB batches cost the server memory of their own (frames, WAL, memtables): measured first with no watcher.
    const alone = await sseLoad(0);
    const watched = await sseLoad(8);
    console.log(
      `8 SSE watchers that do not read, 14 MiB batches: RSS grew ${(watched / MiB).toFixed(1)} MiB, ` +
        `${(alone / MiB).toFixed(1)} MiB with no watcher`,
    );
    // Before, each held a whole round as JSON: +1.4 GiB more than with no watcher here. Two processes under 14 MiB
    // batches differ by up to ~50 MiB of RSS with no watcher at all (rounds freed and not yet collected): twice the
    // slack.
    expect(watched - alone).toBeLessThan(8 * WATCH_BOUND + BACKLOG + 2 * SLACK);
  }, 180_000);
});

/**
 * Six batches of 14 MiB of 2,000 values each, over the same keys, on a fresh server with `watchers` SSE watchers that
 * do not read: how much the server's RSS grew from just before the watchers came.
 */
async function sseLoad(watchers: number): Promise<number> {
  child?.proc.kill('SIGKILL');
  const c = await serve();
  const port = Number(new URL(c.httpUrl).port);
  const kv = await connect<typeof KvActor>(c.url, { timeoutMs: 60_000 });
  // Strings of control characters: six bytes of JSON (\u0001) for each byte stored. The same keys each round, so that
  // the data itself takes the same memory after the first (written before the watchers come).
  const value = pack('\u0001'.repeat(7000));
  const ops = Array.from({ length: 2000 }, (_, i) => ({ type: 'set' as const, key: `b:${i}`, value }));
  await kv.batch(ops);
  const before = await rss(c);
  const sockets = await Promise.all(
    Array.from({ length: watchers }, async () => {
      const s = await tcp(port);
      s.pause();
      s.write(`GET /v1/watch?prefix=b: HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      return s;
    }),
  );
  await new Promise((r) => setTimeout(r, 200));
  for (let round = 0; round < 6; round++) await kv.batch(ops);
  const grown = (await rss(c)) - before;
  // Each reads now: what was sent before its watch overflowed, then the end, WATCH_OVERFLOW.
  for (const text of await Promise.all(sockets.map((s) => readUntil(s, 'event: end')))) {
    expect(text).toMatch(/event: end\ndata: \{"code":"WATCH_OVERFLOW"/);
  }
  for (const s of sockets) s.destroy();
  await kv.close();
  c.proc.kill('SIGKILL');
  await c.exited;
  return grown;
}

/** Reads `s` (resumed) until its text has `marker`; rejects after 20 s. */
function readUntil(s: Socket, marker: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no ${marker} in 20 s`)), 20_000);
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.includes(marker)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    s.on('error', () => {});
    s.resume();
  });
}
