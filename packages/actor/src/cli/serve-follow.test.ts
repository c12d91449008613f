// The replica side of `heapless serve --follow` when NATS cannot be reached at start (no nats-server: a loopback
// port nothing listens on): with follower data of the stream and schema it serves that map, says it is not caught
// up and why, refuses writes with UNAVAILABLE at once, keeps trying to connect, and its close leaves no timer or
// socket; without such data the open fails with UNAVAILABLE "could not connect", and the data is left as it was.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeaplessError } from '@heapless/client/protocol';
import { OffHeapMap } from '@heapless/offheap';
import { ReplicaError, readFollowerState } from '@heapless/replica';
import { addFollowerMeta } from '@heapless/replica/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli, type ServeArgs } from './cli-args.js';
import { openFollowing } from './serve-follow.js';

let work: string;
let deadUrl: string;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'heapless-serve-follow-'));
  // A port that was free a moment ago: connecting to it is refused.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  deadUrl = `nats://127.0.0.1:${port}`;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function args(name: string, ...more: string[]): ServeArgs & { follow: NonNullable<ServeArgs['follow']> } {
  const parsed = parseCli([
    'serve',
    '--data',
    join(work, name),
    '--follow',
    deadUrl,
    '--stream',
    'orders',
    '--log-level',
    'silent',
    ...more,
  ]);
  if (parsed.command !== 'serve' || parsed.follow === undefined) throw new Error('not a follow command line');
  return parsed as ServeArgs & { follow: NonNullable<ServeArgs['follow']> };
}

/** Writes follower data as a follower leaves it: `records` records at `position` of `schema` and `stream`. */
async function followerData(name: string, position: number, schema = 'default', stream = 'orders', records = 3) {
  const map = await OffHeapMap.open<string, unknown>({ dir: join(work, name) });
  const b = map.batch();
  for (let i = 0; i < records; i++) b.set(`k${i}`, { i });
  addFollowerMeta(b, position, schema, stream);
  await b.write();
  await map.close();
}

/** Timers and sockets open now, by kind. */
function handles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo())
    if (r === 'Timeout' || r === 'TCPSocketWrap' || r === 'TCPServerWrap') counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

async function rejection(p: Promise<unknown>): Promise<Error & { code: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code: string };
  }
  throw new Error('expected a rejection');
}

describe('openFollowing with NATS unreachable at start', () => {
  it('serves the local data, not caught up, refuses writes with UNAVAILABLE, retries; close leaves nothing', async () => {
    await followerData('local', 42);
    const before = handles();
    const a = args('local');
    const following = await openFollowing(a, a.follow);
    expect(following.map.get('k2')).toEqual({ i: 2 });
    expect(following.start).toMatchObject({ kind: 'resume', position: 42 });
    await following.waitCaughtUp(); // at once: the local data is what there is to serve
    const status = following.health().follower;
    expect(status).toMatchObject({ position: 42, lag: null, caughtUp: false, failure: null, stream: 'orders' });
    expect(status.lastError).toMatch(/^NATS unreachable since start .*could not connect/);
    const write = await rejection(following.kvOptions.writeSink!.write([{ type: 'delete', key: 'k0' }]));
    expect(write).toBeInstanceOf(HeaplessError);
    expect(write.code).toBe('UNAVAILABLE');
    expect(write.message).toMatch(/unreachable since this server started/);
    // It keeps trying in the background.
    const attempts = () => Number(/attempts to connect: (\d+)/.exec(following.health().follower.lastError!)![1]);
    while (attempts() < 3) await new Promise((r) => setTimeout(r, 50));
    await following.close();
    expect(handles()).toEqual(before);
    expect(() => following.map.get('k0')).toThrow(/closed/i);
    // Nothing was written while offline.
    const reopened = await OffHeapMap.open<string, unknown>({ dir: join(work, 'local') });
    expect(readFollowerState(reopened)).toMatchObject({ position: 42, schema: 'default', stream: 'orders' });
    expect(reopened.get('k0')).toEqual({ i: 0 });
    await reopened.close();
  });

  it('without a local follower data directory: UNAVAILABLE "could not connect", nothing created', async () => {
    const a = args('none');
    const err = await rejection(openFollowing(a, a.follow));
    expect(err).toBeInstanceOf(ReplicaError);
    expect(err.code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect(err.message).toMatch(/could not connect to nats:\/\/127\.0\.0\.1:\d+.*does not exist/);
    expect(existsSync(join(work, 'none'))).toBe(false);
  });

  it('local data of another schema or stream is not served, and is left as it is', async () => {
    await followerData('other-schema', 7, 'v1');
    await followerData('other-stream', 7, 'default', 'invoices');
    for (const [name, why] of [
      ['other-schema', /schema v1, not v2/],
      ['other-stream', /stream invoices, not orders/],
    ] as const) {
      const a = args(name, ...(name === 'other-schema' ? ['--schema', 'v2'] : []));
      const err = await rejection(openFollowing(a, a.follow));
      expect(err.code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
      expect(err.message).toMatch(/could not connect/);
      expect(err.message).toMatch(why);
      const kept = await OffHeapMap.open<string, unknown>({ dir: join(work, name) });
      expect(readFollowerState(kept).position).toBe(7);
      expect(kept.size).toBe(3);
      await kept.close();
    }
  });

  it('a directory of records without follower metadata: INVALID_ARGUMENT', async () => {
    const plain = await OffHeapMap.open<string, unknown>({ dir: join(work, 'plain') });
    plain.set('x', 1);
    await plain.close();
    const a = args('plain');
    expect((await rejection(openFollowing(a, a.follow))).code).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
  });
});
