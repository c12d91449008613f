import { mkdtempSync, rmSync } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvActor, kvRoutes, type Published, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tcp } from './raw-socket.js';

const root = mkdtempSync(join(tmpdir(), 'e2e-kv-watch-sse-'));
const TOKEN = 'sse-token';
let server: Published;
let ref: ReturnType<typeof spawn<KvActor>>;
let map: OffHeapMap<string, unknown>;
let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;

beforeAll(async () => {
  map = await OffHeapMap.open<string, unknown>({ dir: root, threads: 1 });
  // A short linger: the listener tests see the store stop listening soon after the last watch ends.
  ref = spawn(new KvActor(map, { watchLingerMs: 100 }));
  server = await publish(ref, {
    routes: kvRoutes,
    streams: KvActor.streams,
    token: TOKEN,
    allowedOrigins: ['https://app.example'],
  });
  kv = await connect<typeof KvActor>(server.url, { token: TOKEN });
});
afterAll(async () => {
  await kv.close();
  await server.close();
  await ref.stop();
  rmSync(root, { recursive: true, force: true });
});

interface SseEvent {
  event: string;
  id?: string;
  data: Record<string, unknown>;
}

/** A raw GET of `path`: its status and headers, the events parsed as they arrive, and the body text of a refusal. */
function get(
  path: string,
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
): Promise<{ res: IncomingMessage; events: SseEvent[]; body: () => string; ended: Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.httpUrl}${path}`, { headers }, (res) => {
      const events: SseEvent[] = [];
      let text = '';
      let all = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        all += chunk;
        text += chunk;
        for (let at = text.indexOf('\n\n'); at >= 0; at = text.indexOf('\n\n')) {
          const block = text.slice(0, at);
          text = text.slice(at + 2);
          if (block.startsWith(':')) continue;
          const e: SseEvent = { event: 'message', data: {} };
          for (const line of block.split('\n')) {
            const colon = line.indexOf(': ');
            const [name, value] = [line.slice(0, colon), line.slice(colon + 2)];
            if (name === 'event') e.event = value;
            else if (name === 'id') e.id = value;
            else if (name === 'data') e.data = JSON.parse(value) as Record<string, unknown>;
          }
          events.push(e);
        }
      });
      const ended = new Promise<void>((done) => res.once('close', done));
      resolve({ res, events, body: () => all, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('KV watch over Server-Sent Events', () => {
  it('streams the changes under a prefix as events whose id is the sequence, from a sequence or Last-Event-ID', async () => {
    const { sequence: before } = await kv.setMany([['sse:0', pack({ n: 0 })]]);
    const w = await get('/v1/watch?prefix=sse%3A');
    expect(w.res.statusCode).toBe(200);
    expect(w.res.headers['content-type']).toMatch(/^text\/event-stream/);
    await expect.poll(() => w.events.length).toBe(1);
    expect(w.events[0]).toMatchObject({ event: 'open', data: { sequence: expect.any(Number) } });
    await kv.set('sse:1', pack({ n: 1, s: 'ü' }));
    await kv.set('other', pack(1));
    await kv.set('sse:raw', Buffer.from([0xc1])); // not msgpack: sent as bytes
    await kv.delete('sse:0');
    await expect.poll(() => w.events.length).toBe(4);
    const changes = w.events.slice(1);
    expect(changes.map((e) => [e.event, e.data.key, e.data.value, e.data.bytes, e.data.deleted])).toEqual([
      ['change', 'sse:1', { n: 1, s: 'ü' }, undefined, undefined],
      ['change', 'sse:raw', undefined, 'wQ==', undefined],
      ['change', 'sse:0', undefined, undefined, true],
    ]);
    for (const e of changes) expect(e.id).toBe(String(e.data.sequence));
    w.close();

    // From a sequence in the query: the history first; from Last-Event-ID: what follows that event.
    const h = await get(`/v1/watch?prefix=sse:&fromSequence=${before! - 1}`);
    await expect.poll(() => h.events.length).toBe(5);
    expect(h.events.slice(1).map((e) => e.data.key)).toEqual(['sse:0', 'sse:1', 'sse:raw', 'sse:0']);
    h.close();
    const l = await get('/v1/watch?prefix=sse:', {
      authorization: `Bearer ${TOKEN}`,
      'last-event-id': changes[0]!.id!,
    });
    await expect.poll(() => l.events.length).toBe(3);
    expect(l.events.slice(1).map((e) => e.data.key)).toEqual(['sse:raw', 'sse:0']);
    l.close();
  });

  it('refuses hostile queries, a missing token, a foreign host and a sequence it no longer has, before streaming', async () => {
    const refused = async (path: string, headers?: Record<string, string>) => {
      const r = await get(path, headers);
      await r.ended;
      return { status: r.res.statusCode, ...(JSON.parse(r.body()) as { code: string }) };
    };
    expect(await refused('/v1/watch?prefix=%FF')).toMatchObject({ status: 400, code: 'BAD_URL' });
    expect(await refused('/v1/watch?prefix=%ED%A0%80')).toMatchObject({ status: 400, code: 'BAD_URL' });
    expect(await refused('/v1/watch?prefix=a&prefix=b')).toMatchObject({ status: 400, code: 'BAD_ARGUMENTS' });
    for (const bad of ['-1', 'abc', '1e3', '0x10', '01', '1.5', '', '99999999999999999999', '9007199254740993']) {
      expect(await refused(`/v1/watch?fromSequence=${encodeURIComponent(bad)}`)).toMatchObject({
        status: 400,
        code: 'BAD_ARGUMENTS',
      });
    }
    expect(await refused('/v1/watch', { authorization: `Bearer ${TOKEN}`, 'last-event-id': 'nope' })).toMatchObject({
      status: 400,
      code: 'BAD_ARGUMENTS',
    });
    expect(await refused('/v1/watch?fromSequence=9007199254740991')).toMatchObject({
      status: 410,
      code: 'SEQUENCE_GONE',
    });
    expect(await refused(`/v1/watch?prefix=${'k'.repeat(2000)}`)).toMatchObject({ status: 413, code: 'KEY_TOO_LARGE' });
    expect(await refused('/v1/watch', {})).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(await refused('/v1/watch', { authorization: 'Bearer wrong' })).toMatchObject({ status: 401 });
    expect(await refused('/v1/watch', { authorization: `Bearer ${TOKEN}`, host: 'evil.example' })).toMatchObject({
      status: 421,
      code: 'HOST_NOT_ALLOWED',
    });
    expect(
      await refused('/v1/watch', { authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' }),
    ).toMatchObject({ status: 403, code: 'ORIGIN_NOT_ALLOWED' });
    // POST /v1/call/watch cannot stream: refused, and nothing stays open.
    const res = await fetch(`${server.httpUrl}/v1/call/watch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(['']),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('BAD_REQUEST');
    await expect.poll(() => listeners()).toBe(0);
  });

  it('lets an allowed origin read the stream, and leaves no listener once the client goes', async () => {
    const w = await get('/v1/watch', { authorization: `Bearer ${TOKEN}`, origin: 'https://app.example' });
    expect(w.res.statusCode).toBe(200);
    expect(w.res.headers['access-control-allow-origin']).toBe('https://app.example');
    await expect.poll(() => w.events.length).toBe(1);
    expect(listeners()).toBe(1);
    w.close();
    await expect.poll(() => listeners()).toBe(0);
  });
});

describe('closing the server with SSE watchers open', () => {
  it('ends each stream with SHUTTING_DOWN and completes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-kv-watch-sse-close-'));
    const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    const r = spawn(new KvActor(m));
    const s = await publish(r, { routes: kvRoutes, streams: KvActor.streams });
    const open = await new Promise<{ events: string[]; ended: Promise<void> }>((resolve, reject) => {
      const req = request(`${s.httpUrl}/v1/watch`, (res) => {
        const out = { events: [] as string[], ended: new Promise<void>((done) => res.once('close', done)) };
        res.setEncoding('utf8');
        res.on('data', (c: string) => out.events.push(c));
        resolve(out);
      });
      req.on('error', reject);
      req.end();
    });
    await expect.poll(() => open.events.join('')).toMatch(/event: open/);
    await s.close();
    await open.ended;
    expect(open.events.join('')).toMatch(/event: end\ndata: \{"code":"SHUTTING_DOWN"/);
    await r.stop();
    rmSync(dir, { recursive: true, force: true });
  });
});

/** Followers of the map's commit feed: 0 once no watch is open. */
function listeners(): number {
  type Parts = { parts: { persistence: { engine: { writes: { feed: { size: number } } } } } };
  return (map as unknown as Parts).parts.persistence.engine.writes.feed.size;
}

describe('an SSE watcher that never reads', () => {
  it('is let go 10 s after its watch ended, when its end cannot be written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-kv-watch-sse-grace-'));
    const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    // A bound far above what loopback's socket buffers take as event text (several MiB): the end waits behind it.
    const r = spawn(new KvActor(m, { maxWatchBytes: 8 * 1024 * 1024 }));
    const s = await publish(r, { routes: kvRoutes, streams: KvActor.streams });
    const port = Number(new URL(s.httpUrl).port);
    const c = await connect<typeof KvActor>(s.url);
    const socket = await tcp(port);
    try {
      socket.pause();
      socket.write(`GET /v1/watch?prefix=g: HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await new Promise((done) => setTimeout(done, 200));
      // 16 MiB of strings of control characters, ~96 MiB as event text: the watch overflows, its end waits.
      const value = pack('\u0001'.repeat(64 * 1024));
      for (let b = 0; b < 8; b++) {
        await c.batch(Array.from({ length: 32 }, (_, i) => ({ type: 'set' as const, key: `g:${b}:${i}`, value })));
      }
      await new Promise((done) => setTimeout(done, 11_000));
      // Reading now: what the kernel kept, then the close, with no end event (it was never written).
      const text = await new Promise<string>((resolve, reject) => {
        let all = '';
        const timer = setTimeout(() => reject(new Error('the server kept the socket open')), 15_000);
        socket.on('data', (d: Buffer) => {
          all += d.toString('latin1');
        });
        socket.on('error', () => {});
        socket.once('close', () => {
          clearTimeout(timer);
          resolve(all);
        });
        socket.resume();
      });
      expect(text).toMatch(/event: change/);
      expect(text).not.toMatch(/event: end/);
    } finally {
      socket.destroy();
      await c.close();
      await s.close();
      await r.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
