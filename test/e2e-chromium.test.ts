// Issue 11 §4 in a real browser: headless Chromium (Debian's, at /usr/bin/chromium, installed by
// scripts/system-deps.mjs) loads a page from another origin that uses @heapless/client's browser entry. A server
// that allows no origin refuses it (and its data is untouched); one started with that origin allowed serves it over
// WebSocket and HTTP, token included. The page also lays out a struct record, under a Content-Security-Policy without
// 'unsafe-eval' (the client's views are closures, not generated code), byte for byte as the server's map does. And it
// watches a KV server: the typed client's async iterator over the WebSocket, and EventSource over SSE.
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import { Actor, KvActor, kvRoutes, type Published, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import * as offheap from '@heapless/offheap';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

class Notes extends Actor {
  static override readonly exposed = ['add', 'list'] as const;
  readonly #notes: string[] = [];
  add(note: string): number {
    return this.#notes.push(note);
  }
  list(): string[] {
    return [...this.#notes];
  }
}

const require = createRequire(import.meta.url);
const clientPackage = require.resolve('@heapless/client/package.json');
const clientDist = join(dirname(clientPackage), 'dist');
// The client's two dependencies, as the page's import map names them: @heapless/struct's dist, and msgpackr's
// browser entry, index.js, one folder above its Node entry dist/node.cjs (its exports hide package.json).
const structDist = join(dirname(createRequire(clientPackage).resolve('@heapless/struct/package.json')), 'dist');
const msgpackrDir = join(dirname(createRequire(clientPackage).resolve('msgpackr')), '..');
/** The page runs under a Content-Security-Policy without 'unsafe-eval': struct views must work without eval. */
const NONCE = 'e2e-chromium-nonce';
const CSP = `default-src 'self'; script-src 'self' 'nonce-${NONCE}'; connect-src *`;
const TOKEN = 'browser-token';

const PAGE = `<!doctype html><meta charset="utf-8"><title>heapless from another origin</title>
<script type="importmap" nonce="${NONCE}">{"imports":{"msgpackr":"/msgpackr/index.js","@heapless/struct":"/struct/index.js"}}</script>
<script type="module" nonce="${NONCE}">
import { array, connect, httpClient, struct, utf8 } from '/client/browser.js';
const outcome = (p) => p.then((value) => ({ value }), (e) => ({ code: e.code ?? String(e) }));
window.tryServer = async (wsUrl, httpUrl, token) => {
  const ws = await outcome(connect(wsUrl, { token, reconnect: false, timeoutMs: 10000 }).then(async (notes) => {
    const n = await notes.add('from ws');
    await notes.close();
    return n;
  }));
  const http = await outcome(httpClient(httpUrl, { token, timeoutMs: 10000 }).add('from http'));
  return { ws, http };
};
// Run by the page itself, not from tab.evaluate: DevTools lets evaluated code eval whatever the page's CSP says.
const structRecord = () => {
  const User = struct({ id: 'u32', name: utf8(8), friends: array('u16', 2), balance: 'i64' });
  const u = User.view();
  u.id = 7;
  u.name = 'hé';
  u.friends.set(1, 513);
  u.balance -= 3n;
  const read = User.view(User.encode(u.toObject()));
  return { bytes: [...User.bytesOf(u)], read: [read.id, read.name, read.friends.toArray(), String(read.balance)] };
};
try {
  window.structRecord = structRecord();
} catch (e) {
  window.structRecord = { error: String(e) };
}
// A watch of 'b:' over the WebSocket while the page writes three keys, then the same changes by EventSource.
window.tryWatch = async (wsUrl, httpUrl) => {
  const kv = await connect(wsUrl, { reconnect: false, timeoutMs: 10000 });
  const w = kv.watch('b:');
  const { sequence } = await w.opened;
  const bytes = (s) => new TextEncoder().encode(s);
  await kv.set('b:1', bytes('one'));
  await kv.set('a:1', bytes('not watched'));
  await kv.batch([{ type: 'set', key: 'b:2', value: bytes('two') }, { type: 'delete', key: 'b:1' }]);
  const ws = [];
  for await (const [seq, key, value] of w) {
    ws.push([seq > sequence, key, value === null ? null : new TextDecoder().decode(value)]);
    if (ws.length === 3) break;
  }
  await kv.close();
  const sse = await new Promise((resolve) => {
    const got = [];
    const es = new EventSource(httpUrl + '/v1/watch?prefix=b%3A&fromSequence=' + sequence);
    es.addEventListener('change', (e) => {
      const d = JSON.parse(e.data);
      got.push([e.lastEventId === String(d.sequence), d.key, d.deleted === true]);
      if (got.length === 3) {
        es.close();
        resolve(got);
      }
    });
    es.onerror = () => {
      es.close();
      resolve({ error: 'EventSource failed' });
    };
  });
  return { ws, sse };
};
window.ready = true;
</script>`;

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.html': 'text/html' };

/** Serves the page and the client's browser modules, from an origin of its own. */
function pageServer(): Promise<Server> {
  const server = createServer(async (req, res) => {
    const path = normalize(new URL(req.url ?? '/', 'http://x').pathname);
    let file: string | null = null;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-security-policy': CSP }).end(PAGE);
      return;
    }
    if (path.startsWith('/client/')) file = join(clientDist, path.slice('/client/'.length));
    if (path.startsWith('/struct/')) file = join(structDist, path.slice('/struct/'.length));
    if (path.startsWith('/msgpackr/')) file = join(msgpackrDir, path.slice('/msgpackr/'.length));
    try {
      if (file === null) throw new Error('not found');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

let browser: Browser;
let page: Server;
let origin: string;
const notes = new Notes();
const ref = spawn(notes);
let closed: Published; // allows no origin (the default)
let allowing: Published; // allows the page's origin, and wants a token
beforeAll(async () => {
  page = await pageServer();
  const address = page.address();
  origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  closed = await publish(ref);
  allowing = await publish(ref, { token: TOKEN, allowedOrigins: [origin] });
  browser = await chromium.launch({
    executablePath: process.env.HEAPLESS_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // Playwright gives each launch a fresh temporary profile (its --user-data-dir).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await closed?.close();
  await allowing?.close();
  await ref.stop();
  await new Promise((r) => page?.close(r));
});

async function fromPage(server: Published, token?: string): Promise<{ ws: unknown; http: unknown }> {
  const tab = await browser.newPage();
  try {
    await tab.goto(`${origin}/`);
    await tab.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
    return await tab.evaluate(
      ([ws, http, t]) =>
        (
          globalThis as unknown as { tryServer: (...a: unknown[]) => Promise<{ ws: unknown; http: unknown }> }
        ).tryServer(ws, http, t),
      [server.url, server.httpUrl, token] as const,
    );
  } finally {
    await tab.close();
  }
}

describe('the client in Chromium', () => {
  it('lays out struct records under a CSP without eval, byte for byte as the server’s map does', async () => {
    const tab = await browser.newPage();
    try {
      await tab.goto(`${origin}/`);
      await tab.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
      const got = await tab.evaluate(
        () => (globalThis as unknown as { structRecord: { bytes: number[]; read: unknown[] } }).structRecord,
      );
      const User = offheap.struct({
        id: 'u32',
        name: offheap.utf8(8),
        friends: offheap.array('u16', 2),
        balance: 'i64',
      });
      expect(got.bytes).toEqual([...User.encode({ id: 7, name: 'hé', friends: [0, 513], balance: -3n })]);
      expect(got.read).toEqual([7, 'hé', [0, 513], '-3']);
    } finally {
      await tab.close();
    }
  });
});

describe('a KV watch in Chromium', () => {
  it('iterates the changes over the WebSocket and receives them by EventSource', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-chromium-watch-'));
    const map = await offheap.OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    const kvRef = spawn(new KvActor(map));
    const server = await publish(kvRef, { routes: kvRoutes, streams: KvActor.streams, allowedOrigins: [origin] });
    const tab = await browser.newPage();
    try {
      await tab.goto(`${origin}/`);
      await tab.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
      const got = await tab.evaluate(
        ([ws, http]) =>
          (globalThis as unknown as { tryWatch: (...a: unknown[]) => Promise<unknown> }).tryWatch(ws, http),
        [server.url, server.httpUrl] as const,
      );
      expect(got).toEqual({
        ws: [
          [true, 'b:1', 'one'],
          [true, 'b:2', 'two'],
          [true, 'b:1', null],
        ],
        sse: [
          [true, 'b:1', false],
          [true, 'b:2', false],
          [true, 'b:1', true],
        ],
      });
    } finally {
      await tab.close();
      await server.close();
      await kvRef.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a page from another origin, in Chromium', () => {
  it('is refused by a server that allows no origin, and changes nothing', async () => {
    const { ws, http } = await fromPage(closed);
    expect(ws).toEqual({ code: 'ORIGIN_NOT_ALLOWED' });
    // The preflight is refused without CORS headers: the page only learns that the request failed.
    expect(http).toEqual({ code: 'CONNECTION_LOST' });
    expect(notes.list()).toEqual([]);
    // A program (no Origin) is still served.
    const program = await connect<typeof Notes>(closed.url);
    expect(await program.list()).toEqual([]);
    await program.close();
  });

  it('is served by a server started with its origin allowed, over WebSocket and HTTP with the token', async () => {
    const { ws, http } = await fromPage(allowing, TOKEN);
    expect(ws).toEqual({ value: 1 });
    expect(http).toEqual({ value: 2 });
    expect(notes.list()).toEqual(['from ws', 'from http']);
  });

  it('is refused by the allowing server without the token', async () => {
    const { ws, http } = await fromPage(allowing);
    expect(ws).toEqual({ code: 'UNAUTHORIZED' });
    expect(http).toEqual({ code: 'UNAUTHORIZED' });
  });
});
