// `heapless serve --follow` as real processes on a real nats-server: writes to one following server go through the
// change stream, are answered once applied there (read-your-writes) and reach the other follower; /healthz and
// /metrics report position, lag and caught-up; with NATS down reads go on and writes fail with UNAVAILABLE within
// their timeout, and once it is back both servers converge with nothing lost; a server started while NATS is down
// serves its local data (not caught up), refuses writes at once, and follows from its position once NATS is up, or
// says why it cannot; with no local data it does not start.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KvActor } from '@heapless/actor';
import { connect, HeaplessError, type Remote } from '@heapless/client';
import { ChangePublisher, connectToNats, deleteChange, setChange } from '@heapless/replica';
import { jetstreamManager } from '@nats-io/jetstream';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NatsServers, startNatsServer } from '../packages/replica/src/testing/nats-server.js';
import { type Child, cli, sample, startServe } from './serve-child.js';

let nats: NatsServers;
let work: string;
const children: Child[] = [];
beforeAll(async () => {
  nats = await startNatsServer();
  work = mkdtempSync(join(tmpdir(), 'heapless-e2e-follow-'));
});
afterAll(async () => {
  for (const c of children) c.proc.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  await nats.close();
  rmSync(work, { recursive: true, force: true });
});

/** A following server on `stream`, data in `work/<name>`. */
async function follower(name: string, stream: string, ...extra: string[]): Promise<Child> {
  const child = await startServe([
    '--data',
    join(work, name),
    '--follow',
    nats.nodes[0]!.url,
    '--stream',
    stream,
    '--write-timeout',
    '2000',
    ...extra,
  ]);
  children.push(child);
  return child;
}

interface Health {
  ok: boolean;
  follower: {
    position: number;
    lag: number | null;
    caughtUp: boolean;
    lastError: string | null;
    failure: string | null;
  };
}

async function health(c: Child): Promise<Health> {
  return (await (await fetch(`${c.httpUrl}/healthz`)).json()) as never;
}

/** Resolves once `c` has applied `seq` (polled; the test's own timeout bounds it). */
async function reaches(c: Child, seq: number): Promise<void> {
  while ((await health(c)).follower.position < seq) await new Promise((r) => setTimeout(r, 50));
}

/** The `listening` line's `follower` field: how the server got its data. */
function startOf(c: Child): Record<string, unknown> {
  return c.lines.find((l) => l.msg === 'listening')!.follower as Record<string, unknown>;
}

async function stop(c: Child): Promise<void> {
  c.proc.kill('SIGTERM');
  expect(await c.exited).toBe(0);
}

async function code(p: Promise<unknown>): Promise<string> {
  return (await failure(p))?.code ?? 'resolved';
}

/** The HeaplessError `p` rejects with, or undefined when it resolves. */
async function failure(p: Promise<unknown>): Promise<HeaplessError | undefined> {
  try {
    await p;
  } catch (err) {
    if (err instanceof HeaplessError) return err;
    throw err;
  }
  return undefined;
}

/** Publishes `changes` as one message each, as a producer other than the servers; returns the last sequence. */
async function produce(stream: string, messages: Parameters<ChangePublisher['publish']>[0][]): Promise<number> {
  const nc = await connectToNats({ servers: nats.urls });
  const publisher = new ChangePublisher(nc, { stream, schema: 'default' });
  let seq = 0;
  for (const changes of messages) seq = (await publisher.publish(changes)).seq;
  publisher.close();
  await nc.close();
  return seq;
}

/** Runs `f` with the NATS server killed, and starts it again (same port and store) after, whatever happens. */
async function withNatsDown(f: () => Promise<void>): Promise<void> {
  await nats.nodes[0]!.kill();
  try {
    await f();
  } finally {
    if (!nats.nodes[0]!.running) await nats.nodes[0]!.start();
  }
}

describe('heapless serve --follow', () => {
  it('writes go through the stream, read-your-writes on the writer, and the other follower converges', async () => {
    const a = await follower('rw-a', 'rw');
    const b = await follower('rw-b', 'rw');
    const ka: Remote<typeof KvActor> = await connect<typeof KvActor>(a.url);
    const kb: Remote<typeof KvActor> = await connect<typeof KvActor>(b.url);
    const model = new Map<string, unknown>();
    let last = 0;
    for (let i = 0; i < 300; i++) {
      const key = `k${i % 37}`;
      if (i % 7 === 3) {
        await ka.delete(key);
        model.delete(key);
      } else if (i % 11 === 5) {
        const r = await ka.batch([
          { type: 'set', key, value: pack({ i }) },
          { type: 'set', key: `${key}:b`, value: pack({ b: i }) },
        ]);
        last = r.sequence!;
        model.set(key, { i });
        model.set(`${key}:b`, { b: i });
      } else {
        await ka.set(key, pack({ i }));
        model.set(key, { i });
      }
      // Read-your-writes on the server written to: the write was answered once applied there.
      const got = await ka.get(key);
      expect(got === undefined ? undefined : unpack(got)).toEqual(model.get(key));
    }
    const ha = await health(a);
    expect(ha.follower.position).toBeGreaterThanOrEqual(last);
    await reaches(b, ha.follower.position);
    for (const [k, v] of model) expect(unpack((await kb.get(k))!)).toEqual(v);
    expect(await kb.size()).toBe(model.size);
    expect(await code(ka.setMeta('x', new Uint8Array([1])))).toBe('FORBIDDEN');
    const metrics = await (await fetch(`${b.httpUrl}/metrics`)).text();
    expect(sample(metrics, 'heapless_replica_position')).toBe(ha.follower.position);
    expect(sample(metrics, 'heapless_replica_lag')).toBe(0);
    expect(sample(metrics, 'heapless_replica_caught_up')).toBe(1);
    expect((await health(b)).follower).toMatchObject({ caughtUp: true, lag: 0 });
    ka.close();
    kb.close();
  });

  it('NATS down: reads served, writes UNAVAILABLE; back up: writes go on and both converge', async () => {
    const a = await follower('down-a', 'down');
    const b = await follower('down-b', 'down');
    const ka = await connect<typeof KvActor>(a.url);
    const kb = await connect<typeof KvActor>(b.url);
    for (let i = 0; i < 50; i++) await ka.set(`k${i}`, pack(i));
    const before = (await health(a)).follower.position;
    await reaches(b, before);
    await nats.nodes[0]!.kill();
    expect(unpack((await kb.get('k7'))!)).toBe(7);
    expect(unpack((await ka.get('k49'))!)).toBe(49);
    expect(await code(ka.set('k0', pack('lost?')))).toBe('UNAVAILABLE');
    expect(await code(kb.batch([{ type: 'delete', key: 'k1' }]))).toBe('UNAVAILABLE');
    expect((await health(a)).follower.caughtUp).toBe(false);
    await nats.nodes[0]!.start();
    // The client retries what failed; the log stores it once (or twice, which sets the same value).
    for (;;) {
      const c = await code(ka.set('k0', pack('after')));
      if (c === 'resolved') break;
      expect(c).toBe('UNAVAILABLE');
    }
    await kb.set('k50', pack(50));
    const after = (await health(b)).follower.position;
    await Promise.all([reaches(a, after), reaches(b, after)]);
    for (const k of [ka, kb]) {
      expect(unpack((await k.get('k0'))!)).toBe('after');
      expect(unpack((await k.get('k50'))!)).toBe(50);
      expect(await k.size()).toBe(51);
    }
    ka.close();
    kb.close();
  });

  it('started while NATS is down: serves its local data, writes UNAVAILABLE; NATS up: follows on from its position', async () => {
    const stream = 'offline';
    const a = await follower('off-a', stream);
    const ka = await connect<typeof KvActor>(a.url);
    const model = new Map<string, unknown>();
    for (let i = 0; i < 40; i++) {
      await ka.set(`k${i}`, pack(i));
      model.set(`k${i}`, i);
    }
    const at = (await health(a)).follower.position;
    ka.close();
    await stop(a);
    // The stream goes on without this server: what it must apply, with no gap, once it is back.
    const messages = [
      [deleteChange('k0')],
      ...Array.from({ length: 20 }, (_, i) => [setChange(`k${40 + i}`, pack(40 + i))]),
    ];
    const last = await produce(stream, messages);
    model.delete('k0');
    for (let i = 40; i < 60; i++) model.set(`k${i}`, i);
    await withNatsDown(async () => {
      // A start with NATS down listens at once and serves the local data; its close leaves nothing running.
      const first = await follower('off-a', stream);
      await stop(first);
      expect(first.lines.map((l) => l.msg)).not.toContain('still running after shutdown: exiting');
      const off = await follower('off-a', stream);
      expect(off.lines.map((l) => l.msg)).toContain(
        'NATS unreachable at start: serving the local data, connecting in the background',
      );
      const h = await health(off);
      expect(h.follower).toMatchObject({ position: at, lag: null, caughtUp: false, failure: null });
      expect(h.follower.lastError).toMatch(/^NATS unreachable since start .*could not connect/);
      const metrics = await (await fetch(`${off.httpUrl}/metrics`)).text();
      expect(sample(metrics, 'heapless_replica_caught_up')).toBe(0);
      expect(sample(metrics, 'heapless_replica_lag')).toBeNaN(); // unknown, not 0
      const ko = await connect<typeof KvActor>(off.url);
      expect(await ko.size()).toBe(40);
      expect(unpack((await ko.get('k0'))!)).toBe(0);
      expect(unpack((await ko.get('k39'))!)).toBe(39);
      // Refused at once (not after --write-timeout): the message says this server has not reached NATS.
      for (const write of [
        ko.set('x', pack('x')),
        ko.delete('k1'),
        ko.batch([{ type: 'set', key: 'y', value: pack('y') }]),
      ]) {
        const err = await failure(write);
        expect(err?.code).toBe('UNAVAILABLE');
        expect(err?.message).toMatch(/unreachable since this server started/);
      }
      await nats.nodes[0]!.start();
      await reaches(off, last);
      expect(off.lines.map((l) => l.msg)).toContain('connected to NATS: following the stream from the local position');
      for (const [k, v] of model) expect(unpack((await ko.get(k))!)).toBe(v);
      expect(await ko.get('k0')).toBeUndefined();
      expect(await ko.size()).toBe(model.size);
      await ko.set('after', pack('after'));
      expect(unpack((await ko.get('after'))!)).toBe('after');
      let caughtUp = (await health(off)).follower;
      while (!caughtUp.caughtUp) {
        await new Promise((r) => setTimeout(r, 50));
        caughtUp = (await health(off)).follower;
      }
      expect(caughtUp).toMatchObject({ lag: 0, lastError: null, failure: null, position: last + 1 });
      ko.close();
      await stop(off);
    });
  });

  it('started while NATS is down, its stream purged past its position: says POSITION_PURGED once up, serves on', async () => {
    const stream = 'off-purged';
    const a = await follower('off-purged', stream);
    const ka = await connect<typeof KvActor>(a.url);
    for (let i = 0; i < 10; i++) await ka.set(`k${i}`, pack(i));
    ka.close();
    await stop(a);
    const last = await produce(stream, [[setChange('k10', pack(10))], [setChange('k11', pack(11))]]);
    const nc = await connectToNats({ servers: nats.urls });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(stream, { seq: last }); // keeps only the last message
    await nc.close();
    await withNatsDown(async () => {
      const off = await follower('off-purged', stream);
      await nats.nodes[0]!.start();
      let h = (await health(off)).follower;
      while (h.failure === null) {
        await new Promise((r) => setTimeout(r, 50));
        h = (await health(off)).follower;
      }
      expect(h).toMatchObject({ caughtUp: false, position: 10, lag: null });
      expect(h.failure).toMatch(/^HEAPLESS_ERR_REPLICA_POSITION_PURGED: .*message 11 is gone.*kept as it is/);
      expect(h.lastError).toBe(h.failure);
      const k = await connect<typeof KvActor>(off.url);
      expect(await k.size()).toBe(10); // the local data, served as it was
      expect(unpack((await k.get('k9'))!)).toBe(9);
      const err = await failure(k.set('k0', pack('no')));
      expect(err?.code).toBe('UNAVAILABLE');
      expect(err?.message).toMatch(/cannot follow its change stream \(HEAPLESS_ERR_REPLICA_POSITION_PURGED/);
      k.close();
      await stop(off);
    });
  });

  it('NATS down and no local data to serve: does not start, exit 1 "could not connect"', async () => {
    await withNatsDown(async () => {
      const run = promisify(execFile)(process.execPath, [
        cli,
        'serve',
        '--port',
        '0',
        '--data',
        join(work, 'off-none'),
        '--follow',
        nats.nodes[0]!.url,
        '--stream',
        'offline',
      ]);
      await expect(run).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/could not connect to nats:.*no local data to serve/),
      });
    });
  });

  it('heapless checkpoint publish of a running server, then a fresh follower starts from it and catches up', async () => {
    const a = await follower('cp-a', 'cp');
    const ka = await connect<typeof KvActor>(a.url);
    for (let i = 0; i < 200; i++) await ka.set(`k${i}`, pack({ i }));
    const at = (await health(a)).follower.position;
    // The server goes on running and writing while its directory is published: the command only reads it.
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing; i++) await ka.set(`w${i % 10}`, pack({ i }));
    })();
    const data = join(work, 'cp-a');
    const publish = [
      cli,
      'checkpoint',
      'publish',
      '--data',
      data,
      '--nats',
      nats.nodes[0]!.url,
      '--bucket',
      'cp-bucket',
    ];
    // A run of the command killed while it works leaves its copy (as large as the engine); the next run removes it.
    const killed = spawn(process.execPath, publish);
    const owned = () =>
      readdirSync(work).find((name) => name.startsWith('cp-a.publish-') && existsSync(join(work, name, 'PUBLISHER')));
    while (owned() === undefined) await new Promise((r) => setTimeout(r, 5));
    const left = owned()!;
    killed.kill('SIGKILL');
    await once(killed, 'exit');
    expect(existsSync(join(work, left))).toBe(true);
    const { stdout } = await promisify(execFile)(process.execPath, publish);
    writing = false;
    await writes;
    const published = JSON.parse(stdout) as { id: string; position: number; schema: string; stream: string };
    expect(published).toMatchObject({ schema: 'default', stream: 'cp' });
    // One state the server had: at least what was written before, at most what it has applied now.
    expect(published.position).toBeGreaterThanOrEqual(at);
    const applied = (await health(a)).follower.position;
    expect(published.position).toBeLessThanOrEqual(applied);
    ka.close();
    await stop(a);
    expect(readdirSync(work).filter((name) => name.includes('.publish-'))).toEqual([]); // the copy is removed
    // More writes after the checkpoint, through a second server.
    const b = await follower('cp-b', 'cp');
    const kb = await connect<typeof KvActor>(b.url);
    for (let i = 200; i < 250; i++) await kb.set(`k${i}`, pack({ i }));
    const end = (await health(b)).follower.position;
    const fresh = await follower('cp-fresh', 'cp', '--bucket', 'cp-bucket', '--max-replay', '10');
    expect(startOf(fresh)).toMatchObject({
      kind: 'checkpoint',
      reason: 'no-local-data',
      checkpointId: published.id,
      position: published.position,
      mapSource: 'image',
    });
    await reaches(fresh, end);
    const kf = await connect<typeof KvActor>(fresh.url);
    // Each write during the publish was one message, on one of ten keys.
    expect(await kf.size()).toBe(250 + Math.min(10, applied - at));
    // What the checkpoint held and what the fresh follower replayed after it add up to the other follower's state.
    for (let j = 0; j < 10; j++) expect(await kf.get(`w${j}`)).toEqual(await kb.get(`w${j}`));
    kb.close();
    expect(unpack((await kf.get('k249'))!)).toEqual({ i: 249 });
    expect(unpack((await kf.get('k0'))!)).toEqual({ i: 0 });
    kf.close();
  });

  it('checkpoint publish refuses a directory without follower metadata', async () => {
    const dir = join(work, 'plain');
    const s = await startServe(['--data', dir]);
    children.push(s);
    await stop(s);
    const run = promisify(execFile)(process.execPath, [
      cli,
      'checkpoint',
      'publish',
      '--data',
      dir,
      '--nats',
      nats.nodes[0]!.url,
      '--bucket',
      'cp-bucket',
    ]);
    await expect(run).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('no follower position') });
  });

  it('a stream it cannot follow: the server does not start, or with --serve-stale serves reads and says why', async () => {
    const stream = 'stale';
    const writer = await follower('stale-writer', stream);
    const kw = await connect<typeof KvActor>(writer.url);
    for (let i = 0; i < 5; i++) await kw.set(`k${i}`, pack(i));
    kw.close();
    await stop(writer);
    // A producer of another schema writes to the same stream.
    const nc = await connectToNats({ servers: nats.urls });
    await new ChangePublisher(nc, { stream, schema: 'other' }).publish([setChange('x', pack('x'))]);
    await nc.close();
    await expect(follower('stale-writer', stream)).rejects.toThrow(
      /HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH|schema 'other'/,
    );
    const stale = await follower('stale-writer', stream, '--serve-stale');
    // It listens at once; it stops at the message of the other schema soon after.
    type Status = { caughtUp: boolean; failure: string | null; position: number };
    let h = (await health(stale)).follower as unknown as Status;
    while (h.failure === null) {
      await new Promise((r) => setTimeout(r, 50));
      h = (await health(stale)).follower as unknown as Status;
    }
    expect(h.position).toBe(5);
    expect(h.caughtUp).toBe(false);
    expect(h.failure).toMatch(/^HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH: .*schema/);
    const k = await connect<typeof KvActor>(stale.url);
    expect(await k.size()).toBe(5);
    expect(unpack((await k.get('k4'))!)).toBe(4);
    expect(await code(k.set('k0', pack('no')))).toBe('UNAVAILABLE');
    k.close();
  });
});
