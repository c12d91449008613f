// `heapless serve` as a child process: real command line, real signals, real sockets.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import { connect, type HeaplessError, httpClient } from '@heapless/client';
import { Engine } from '@heapless/engine';
import { pack, unpack } from 'msgpackr';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Child, cli, startServe } from './serve-child.js';

const TOKEN = 'cli-token';

const children: Child[] = [];
afterEach(() => {
  // Servers a test started for itself; the shared one lives until afterAll.
  for (const c of children.splice(0)) if (c !== shared) c.proc.kill('SIGKILL');
});
let shared: Child | undefined;
afterAll(() => {
  shared?.proc.kill('SIGKILL');
});
/** One memory-only server for the tests that do not stop it. */
async function sharedServer(): Promise<Child> {
  shared ??= await start();
  return shared;
}

/** Starts `heapless serve` (default `--memory`) on a free port and resolves once it logs that it listens. */
function start(...extra: string[]): Promise<Child> {
  return startWith({}, ...extra);
}

/** {@link start} with more environment variables. */
async function startWith(env: Record<string, string>, ...extra: string[]): Promise<Child> {
  const child = await startServe(extra.length === 0 ? ['--memory'] : extra, { HEAPLESS_TOKEN: TOKEN, ...env });
  children.push(child);
  return child;
}

describe('heapless serve', () => {
  it('serves the KV actor over WebSocket and HTTP, the same data on both, bytes as the client encoded them', async () => {
    const s = await sharedServer();
    const kv = await connect<typeof KvActor>(s.url, { token: TOKEN });
    const user = pack({ name: 'ada', age: 36 });
    await kv.set('user:1', user);
    expect(unpack((await kv.get('user:1'))!)).toEqual({ name: 'ada', age: 36 });
    const http = httpClient<typeof KvActor>(s.httpUrl, { token: TOKEN });
    expect(unpack((await http.get('user:1'))!)).toEqual({ name: 'ada', age: 36 });
    await http.set('user:2', pack({ name: 'bob' }));
    expect(await kv.has('user:2')).toBe(true);
    await kv.close();
  });

  it('refuses a missing or wrong token on both', async () => {
    const s = await sharedServer();
    await expect(connect<typeof KvActor>(s.url)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    await expect(connect<typeof KvActor>(s.url, { token: 'nope' })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    await expect(httpClient<typeof KvActor>(s.httpUrl).size()).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('answers each limit with its typed error and stays up', async () => {
    const s = await sharedServer();
    const kv = await connect<typeof KvActor>(s.url, { token: TOKEN });
    const raw = kv as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: HeaplessError) => e.code,
      );
    expect(await codeOf(kv.set('k'.repeat(2000), pack(1)))).toBe('KEY_TOO_LARGE');
    expect(await codeOf(kv.set('k', new Uint8Array(2 * 1024 * 1024)))).toBe('VALUE_TOO_LARGE');
    expect(await codeOf(raw.set('k', 'not bytes'))).toBe('BAD_ARGUMENTS');
    expect(raw.flushAll).toBeUndefined(); // not in the hello's method list: the ref has no such method
    expect(await codeOf(kv.set('k', pack(1), { sync: true }))).toBe('BAD_ARGUMENTS'); // memory-only
    expect(await codeOf(kv.set('k', pack(1)))).toBe('ok');
    await kv.close();
  });

  it('exposes /metrics as Prometheus text', async () => {
    const s = await sharedServer();
    const kv = await connect<typeof KvActor>(s.url, { token: TOKEN });
    await kv.set('metrics:a', pack(1));
    await kv.get('metrics:a');
    const res = await fetch(`${s.httpUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    const sample =
      /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)*\})? (-?[0-9.]+(e[-+]?[0-9]+)?|NaN|[+-]Inf)$/;
    for (const line of text.trimEnd().split('\n')) {
      if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
      expect(line).toMatch(sample);
    }
    expect(text).toMatch(/heapless_calls_total\{method="set",outcome="ok"\} [1-9]\d*\n/);
    expect(text).toMatch(/heapless_call_duration_seconds_count\{method="get"\} [1-9]\d*\n/);
    expect(text).toMatch(/heapless_ws_connections [1-9]\d*\n/);
    expect(text).toMatch(/heapless_entries [1-9]\d*\n/);
    expect(text).not.toMatch(/heapless_engine_/); // memory-only: no engine to report on
    expect(text).toMatch(/heapless_memory_bytes\{kind="heap_used"\} \d+/);
    await kv.close();
  });

  it('shuts down gracefully on SIGTERM: calls in flight are answered, then it exits 0 on its own', async () => {
    const s = await start();
    const kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
    const calls = Array.from({ length: 2000 }, (_, i) => kv.set(`k${i}`, pack(i)));
    await kv.size(); // the first frames have been answered: the server is busy with the rest
    s.proc.kill('SIGTERM');
    const outcomes = await Promise.allSettled(calls);
    for (const o of outcomes) {
      if (o.status === 'rejected')
        expect(['SHUTTING_DOWN', 'CONNECTION_LOST']).toContain((o.reason as HeaplessError).code);
    }
    expect(await s.exited).toBe(0);
    const msgs = s.lines.map((l) => l.msg);
    expect(msgs).toContain('stopped');
    expect(msgs).not.toContain('still running after shutdown: exiting');
    await kv.close();
  });

  it('keeps the data across a SIGTERM restart, and acknowledged writes across a SIGKILL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-serve-'));
    try {
      let s = await start('--data', dir);
      let kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      await Promise.all(Array.from({ length: 500 }, (_, i) => kv.set(`k${i}`, pack({ i }))));
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      await kv.close();

      s = await start('--data', dir);
      // a clean stop wrote the map image: the restart loads it instead of scanning the engine
      expect(s.lines.find((l) => l.msg === 'listening')).toMatchObject({ entries: 500, loadedFrom: 'image' });
      kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      expect(await kv.size()).toBe(500);
      expect(unpack((await kv.get('k499'))!)).toEqual({ i: 499 });
      // Acknowledged with sync: survives kill -9. Acknowledged without: handed to the OS, so it survives it too.
      await Promise.all(Array.from({ length: 50 }, (_, i) => kv.set(`s${i}`, pack(i), { sync: true })));
      await Promise.all(Array.from({ length: 50 }, (_, i) => kv.set(`n${i}`, pack(i))));
      s.proc.kill('SIGKILL');
      await s.exited;
      await kv.close();

      s = await start('--data', dir);
      // after kill -9 the engine moved on past the image: the start loads it and replays the WAL after it, no scan;
      // the 100 writes go into memory after the open (the count would wait for them), and are served at once
      const listening = s.lines.find((l) => l.msg === 'listening');
      expect(listening).toMatchObject({ replayPending: 100, loadedFrom: 'image', imageRejected: null });
      expect(listening).not.toHaveProperty('entries');
      kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      const synced = await kv.getMany(Array.from({ length: 50 }, (_, i) => `s${i}`));
      expect(synced.map((v) => unpack(v!))).toEqual(Array.from({ length: 50 }, (_, i) => i));
      const unsynced = await kv.getMany(Array.from({ length: 50 }, (_, i) => `n${i}`));
      expect(unsynced.map((v) => unpack(v!))).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(await kv.size()).toBe(600);
      // A persisted server reports its engine: the replayed writes sit in the memtable.
      const metrics = await (
        await fetch(`${s.httpUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
      ).text();
      expect(metrics).toMatch(/heapless_engine_memtable_bytes [1-9]\d*\n/);
      expect(metrics).toMatch(/heapless_engine_table_files \d+\n/);
      await kv.close();
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hands its engine tuning flags to the engine: no WAL, the codec', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-serve-tuning-'));
    try {
      const s = await start('--data', dir, '--disable-wal', '--compression', 'none');
      const kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      await Promise.all(Array.from({ length: 2000 }, (_, i) => kv.set(`k${i}`, pack({ i, pad: 'p'.repeat(200) }))));
      expect(readdirSync(dir).filter((n) => n.endsWith('.log'))).toEqual([]); // no write-ahead log at all
      await kv.close();
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      const engine = await Engine.open(dir, { readOnly: true });
      try {
        const tables = engine.tableProperties();
        expect(tables.length).toBeGreaterThan(0);
        for (const t of tables) expect(t.properties.compression).toBe('none'); // the default is snappy
      } finally {
        await engine.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes live checkpoints under --checkpoint-root only, each opening as a copy of the store', async () => {
    const root = mkdtempSync(join(tmpdir(), 'heapless-serve-cp-'));
    try {
      const post = (url: string, name: string) =>
        fetch(`${url}/v1/kv/_checkpoint`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ name }),
        });
      const plain = await start('--data', join(root, 'plain'));
      expect(await (await post(plain.httpUrl, 'x')).json()).toMatchObject({ code: 'FORBIDDEN' });
      plain.proc.kill('SIGTERM');
      expect(await plain.exited).toBe(0);

      const s = await start('--data', join(root, 'data'), '--checkpoint-root', join(root, 'copies'));
      const kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      await Promise.all(Array.from({ length: 300 }, (_, i) => kv.set(`k${i}`, pack({ i }))));
      const done = await kv.checkpoint('first');
      expect(done.dir).toBe(join(root, 'copies', 'first'));
      await kv.set('after', pack(1));
      expect((await post(s.httpUrl, '../escape')).status).toBe(400);
      await kv.close();
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      // The copy is a data directory of its own: a server on it holds what was written before the checkpoint.
      const copy = await start('--data', done.dir);
      expect(copy.lines.find((l) => l.msg === 'listening')).toMatchObject({ entries: 300, loadedFrom: 'image' });
      copy.proc.kill('SIGTERM');
      expect(await copy.exited).toBe(0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('says at start-up how the map image was read, and in one line why not by the native helper', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-loader-'));
    const listening = (c: Child) => c.lines.find((l) => l.msg === 'listening');
    const warning = (c: Child) => c.lines.filter((l) => /native helper not in use/.test(String(l.msg)));
    const stop = async (c: Child) => {
      c.proc.kill('SIGTERM');
      expect(await c.exited).toBe(0);
    };
    const off = { HEAPLESS_NATIVE: '0' };
    try {
      let s = await startWith(off, '--data', dir);
      const kv = await connect<typeof KvActor>(s.url, { token: TOKEN, reconnect: false });
      await Promise.all(Array.from({ length: 100 }, (_, i) => kv.set(`k${i}`, pack(i))));
      await kv.close();
      await stop(s);

      s = await startWith(off, '--data', dir);
      const why = 'HEAPLESS_NATIVE=0 turns the native helper off';
      expect(listening(s)).toMatchObject({ entries: 100, loadedFrom: 'image', imageLoader: 'read', native: why });
      expect(warning(s)).toEqual([expect.objectContaining({ level: 40, native: why })]);
      await stop(s);

      s = await start('--data', dir);
      if (process.platform === 'linux') {
        expect(listening(s)).toMatchObject({ entries: 100, loadedFrom: 'image', imageLoader: 'mapped', native: null });
        expect(warning(s)).toEqual([]);
      }
      await stop(s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says clearly when the data directory is locked by another process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-lock-'));
    try {
      const first = await start('--data', dir);
      const err = await start('--data', dir).catch((e: Error) => e.message);
      expect(err).toMatch(/exited with 1: heapless: HEAPLESS_ERR_ENGINE_LOCKED: .*lock/i);
      first.proc.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 on a bad command line with the error and one line that says where the usage is', async () => {
    expect(await run('serve', '--port', 'x')).toEqual({
      code: 2,
      stderr:
        'heapless: --port must be an integer from 0 to 65535, got x\nheapless --help lists the commands and the options of serve\n',
    });
    const dir = mkdtempSync(join(tmpdir(), 'heapless-config-'));
    try {
      const config = join(dir, 'bad.json');
      writeFileSync(config, '{"port": "80"}');
      const { code, stderr } = await run('serve', '--config', config);
      expect(code).toBe(2);
      expect(stderr.split('\n')).toEqual([
        `heapless: --config ${config}: "port" must be an integer`,
        'heapless --help lists the commands and the options of serve',
        '',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('a start that fails on a port in use takes back what it created of --data, and only that', () => {
    let busy: Server;
    let port: number;
    let root: string;
    beforeAll(async () => {
      busy = createServer();
      await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
      port = (busy.address() as AddressInfo).port;
      root = mkdtempSync(join(tmpdir(), 'heapless-inuse-'));
    });
    afterAll(async () => {
      await new Promise((r) => busy.close(r));
      rmSync(root, { recursive: true, force: true });
    });
    const serveOnBusyPort = async (data: string) => {
      const { code, stderr } = await run('serve', '--port', String(port), '--data', data);
      expect(code).toBe(1);
      expect(stderr).toMatch(/EADDRINUSE/);
    };

    it('a directory that did not exist, and its missing parents, are removed', async () => {
      await serveOnBusyPort(join(root, 'new', 'deeper', 'data'));
      expect(readdirSync(root)).toEqual([]);
    });

    it('an empty directory stays, empty', async () => {
      const data = join(root, 'empty');
      mkdirSync(data);
      await serveOnBusyPort(data);
      expect(readdirSync(data)).toEqual([]);
      rmSync(data, { recursive: true });
    });

    it('a directory holding data keeps every file and record', async () => {
      const data = join(root, 'kept');
      const stopped = async (c: Child) => {
        c.proc.kill('SIGTERM');
        expect(await c.exited).toBe(0);
      };
      let s = await start('--data', data);
      const kv = await connect<typeof KvActor>(s.url, { token: TOKEN });
      await kv.set('k', pack('v'));
      await kv.close();
      await stopped(s);
      const files = readdirSync(data);
      await serveOnBusyPort(data);
      expect(readdirSync(data)).toEqual(expect.arrayContaining(files));
      s = await start('--data', data);
      const again = await connect<typeof KvActor>(s.url, { token: TOKEN });
      expect(unpack((await again.get('k'))!)).toBe('v');
      await again.close();
      await stopped(s);
    });
  });
});

/** Runs the built `heapless` with `args` to its exit; its exit code and stderr. */
async function run(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((r) => proc.once('exit', r));
  return { code, stderr };
}
