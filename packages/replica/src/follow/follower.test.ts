// Followers on a real nats-server: two followers of one stream equal the model after many writes; a restart
// resumes from the stored position with nothing applied twice (per-key counters written in the same batches); a
// fresh follower beyond its max replay loads the published checkpoint from its map image and catches up; a changed
// schema drops the local data for that schema's checkpoint; a stream purged past the local position takes the
// checkpoint path, or fails with POSITION_PURGED when there is none; a map already open (served while NATS was
// unreachable) is taken over as it is and resumes from its position, or stays the caller's when it cannot.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAP_IMAGE_FILE, nativeStatus, OffHeapMap } from '@heapless/offheap';
import { jetstreamManager } from '@nats-io/jetstream';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CheckpointStore,
  ensureChangeStream,
  Follower,
  type FollowerOptions,
  publishMapCheckpoint,
  ReplicaError,
  readFollowerState,
} from '../index.js';
import { addFollowerMeta, META_CHECKPOINT, META_POSITION, openLocalFollowerData } from '../internal.js';
import {
  COUNTER_PREFIX,
  countApplications,
  counters,
  ModelWriter,
  mapHex,
  modelHex,
} from '../testing/follow-support.js';
import { startNatsServer } from '../testing/nats-server.js';
import { natsForTests, rejectionCode } from '../testing/replica-support.js';

/** Writes of the two-follower case: 10,000 by default, HEAPLESS_REPLICA_WRITES=100000 for the size. */
const WRITES = Number(process.env.HEAPLESS_REPLICA_WRITES ?? 10_000);

const servers = natsForTests(startNatsServer);
let work: string;
let checkpoints: CheckpointStore;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'heapless-follow-'));
  checkpoints = await CheckpointStore.open(servers.nc, { bucket: 'follow-checkpoints' });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

let streams = 0;
async function newStream(): Promise<string> {
  const name = `follow${++streams}`;
  await ensureChangeStream(servers.nc, { name });
  return name;
}

/** The position of the newest v1 checkpoint of `stream` once it reaches `last`, or after 10 s what it is then (0: none). */
async function newestCheckpointReaching(stream: string, last: number): Promise<number> {
  const newest = async () => {
    for (const c of await checkpoints.list('v1')) {
      const m = await checkpoints.manifestIfPresent(c);
      if (m?.stream === stream) return m.position;
    }
    return 0;
  };
  let at = 0;
  for (let i = 0; i < 200 && at < last; i++) {
    await new Promise((r) => setTimeout(r, 50));
    at = await newest();
  }
  return at;
}

async function follow(dir: string, stream: string, more: Partial<FollowerOptions> = {}): Promise<Follower> {
  let follower: Follower | undefined;
  follower = await Follower.open({
    nc: servers.nc,
    dir: join(work, dir),
    stream,
    schema: 'v1',
    checkpoints,
    onBatch: (messages, b) => countApplications(messages, b, follower!.map),
    ...more,
  });
  return follower;
}

describe('Follower', () => {
  it(
    `two followers equal the model after ${WRITES} writes, and apply every change exactly once`,
    async () => {
      const stream = await newStream();
      const writer = new ModelWriter(servers.nc, stream, 'v1');
      const a = await follow('two-a', stream);
      await writer.write(Math.floor(WRITES / 2));
      const b = await follow('two-b', stream);
      await writer.write(WRITES - Math.floor(WRITES / 2));
      await Promise.all([a.waitCaughtUp(), b.waitCaughtUp()]);
      for (const f of [a, b]) {
        expect(f.position).toBe(writer.lastSeq);
        expect(mapHex(f.map)).toEqual(modelHex(writer.model));
        expect(counters(f.map)).toEqual(Object.fromEntries(writer.touches));
        expect(f.status()).toMatchObject({ caughtUp: true, lag: 0, position: writer.lastSeq, failure: null });
        expect(f.start.kind).toBe('replay');
      }
      await Promise.all([a.close(), b.close()]);
    },
    Math.max(60_000, WRITES * 3),
  ); // ms: the 100k writes take a minute or two on a loaded 2-core machine

  it('a restart resumes from the stored position: nothing applied twice or missed', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 100, 7);
    let f = await follow('restart', stream);
    for (let round = 0; round < 3; round++) {
      await writer.write(300);
      if (round === 1) await f.waitFor(writer.lastSeq - 100); // close while behind, too
      await f.close();
      await writer.write(200);
      f = await follow('restart', stream);
      expect(f.start).toMatchObject({ kind: 'resume', reason: null, mapSource: 'image' });
      await f.waitCaughtUp();
      expect(mapHex(f.map)).toEqual(modelHex(writer.model));
      expect(counters(f.map)).toEqual(Object.fromEntries(writer.touches));
      expect(readFollowerState(f.map)).toMatchObject({ position: writer.lastSeq, schema: 'v1', stream });
    }
    await f.close();
  });

  it('a fresh follower loads the newest checkpoint from its map image (no scan) and catches up', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 300, 3);
    const source = await follow('cp-source', stream, { keepCheckpoints: 2 });
    await writer.write(1500);
    await source.waitCaughtUp();
    const first = await source.publishCheckpoint();
    await writer.write(500);
    await source.waitCaughtUp();
    const published = await source.publishCheckpoint();
    expect(published.manifest).toMatchObject({ schema: 'v1', stream, position: source.position });
    expect(published.manifest.position).toBeGreaterThan(first.manifest.position);
    await writer.write(100);
    const logged: string[] = [];
    const log = { info: (details: object, message: string) => logged.push(`${message} ${JSON.stringify(details)}`) };
    const fresh = await follow('cp-fresh', stream, { maxReplay: 50, log: { ...log, warn: log.info } });
    expect(fresh.start).toMatchObject({
      kind: 'checkpoint',
      reason: 'no-local-data',
      checkpointId: published.manifest.id,
      position: published.manifest.position,
      mapSource: 'image',
      // Checked as it was downloaded, mapped unread (by the native loader; the plain one reads it anyway).
      mapImageCheck: nativeStatus.imageLoader === 'mapped' ? 'stream' : 'open',
    });
    expect(new TextDecoder().decode(fresh.map.meta.get(META_CHECKPOINT))).toBe(published.manifest.id);
    await fresh.waitCaughtUp();
    expect(mapHex(fresh.map)).toEqual(modelHex(writer.model));
    if (fresh.start.mapImageCheck === 'stream') {
      // Once caught up, the image mapped unread is read into memory in the background, all of it.
      const size = statSync(join(work, 'cp-fresh', MAP_IMAGE_FILE)).size;
      await vi.waitFor(() =>
        expect(logged).toContainEqual(expect.stringMatching(`read into memory {"bytes":${size},`)),
      );
    }
    // The counters came with the checkpoint: still exactly one application per change.
    expect(counters(fresh.map)).toEqual(Object.fromEntries(writer.touches));
    // With no checkpoint store, a fresh follower replays the stream from its start.
    const replaying = await follow('cp-replay', stream, { checkpoints: undefined });
    expect(replaying.start.kind).toBe('replay');
    await replaying.waitCaughtUp();
    expect(mapHex(replaying.map)).toEqual(modelHex(writer.model));
    // keep 2: three published, the oldest gone
    await source.publishCheckpoint();
    expect((await checkpoints.list('v1')).filter((c) => c.id === first.manifest.id)).toEqual([]);
    await Promise.all([source.close(), fresh.close(), replaying.close()]);
  });

  it('a follower far behind with local data loads a newer checkpoint, and resumes when there is none newer', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 200, 5);
    const lagging = await follow('lag-local', stream, { checkpoints: undefined });
    await writer.write(100);
    await lagging.waitCaughtUp();
    await lagging.close();
    await writer.write(400);
    const again = await follow('lag-local', stream, { maxReplay: 10 });
    expect(again.start).toMatchObject({ kind: 'resume' }); // no checkpoint of this stream is newer
    await again.waitCaughtUp();
    expect(mapHex(again.map)).toEqual(modelHex(writer.model));
    // Another follower stops; the first publishes a checkpoint; past max replay the second loads it.
    const second = await follow('lag-second', stream);
    await second.waitCaughtUp();
    await second.close();
    await writer.write(300);
    await again.waitCaughtUp();
    const cp = await again.publishCheckpoint();
    await writer.write(5);
    const back = await follow('lag-second', stream, { maxReplay: 10 });
    expect(back.start).toMatchObject({ kind: 'checkpoint', reason: 'lag', checkpointId: cp.manifest.id });
    await back.waitCaughtUp();
    expect(mapHex(back.map)).toEqual(modelHex(writer.model));
    expect(counters(back.map)).toEqual(Object.fromEntries(writer.touches));
    await Promise.all([again.close(), back.close()]);
  });

  it('a changed schema drops the local data and loads that schema checkpoint', async () => {
    const stream = await newStream();
    const v1 = new ModelWriter(servers.nc, stream, 'v1', 100, 11);
    const f = await follow('schema', stream);
    await v1.write(200);
    await f.waitCaughtUp();
    await f.close();
    // The producer switches to schema v2 and builds its first v2 checkpoint offline (a map with the follower
    // metadata at the stream's last v1 position), as `heapless checkpoint publish` does from a directory.
    const v2 = new ModelWriter(servers.nc, stream, 'v2', 50, 13);
    const built = await OffHeapMap.open<string, unknown>({ dir: join(work, 'schema-build') });
    const b = built.batch();
    for (let i = 0; i < 50; i++) {
      const value = pack({ v2: i });
      b.setBytes(`k${i}`, value);
      v2.model.set(`k${i}`, value);
    }
    addFollowerMeta(b, v1.lastSeq, 'v2', stream);
    await b.write();
    const cp = await publishMapCheckpoint(built, checkpoints, { dir: join(work, 'schema-build') });
    await built.close();
    await v2.write(100);
    const g = await Follower.open({ nc: servers.nc, dir: join(work, 'schema'), stream, schema: 'v2', checkpoints });
    expect(g.start).toMatchObject({ kind: 'checkpoint', reason: 'schema-changed', checkpointId: cp.manifest.id });
    await g.waitCaughtUp();
    expect(mapHex(g.map)).toEqual(modelHex(v2.model));
    expect(g.map.has(`${COUNTER_PREFIX}k0`)).toBe(false); // the v1 data is gone
    await g.close();
  });

  it('a stream purged past the local position takes the checkpoint path, or fails with POSITION_PURGED', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 100, 17);
    const behind = await follow('purged-behind', stream);
    const ahead = await follow('purged-ahead', stream);
    await writer.write(100);
    await Promise.all([behind.waitCaughtUp(), ahead.waitCaughtUp()]);
    await behind.close();
    await writer.write(200);
    await ahead.waitCaughtUp();
    const cp = await ahead.publishCheckpoint();
    await writer.write(50);
    const jsm = await jetstreamManager(servers.nc);
    await jsm.streams.purge(stream, { seq: cp.manifest.position - 10 }); // keeps from there on
    const f = await follow('purged-behind', stream);
    expect(f.start).toMatchObject({ kind: 'checkpoint', reason: 'purged', checkpointId: cp.manifest.id });
    await f.waitCaughtUp();
    expect(mapHex(f.map)).toEqual(modelHex(writer.model));
    await f.close();
    // Without any checkpoint of the schema: a typed POSITION_PURGED, and the local data stays.
    const bare = await newStream();
    const w2 = new ModelWriter(servers.nc, bare, 'v1', 10, 19);
    await w2.write(20);
    const stale = await follow('purged-bare', bare, { checkpoints: undefined });
    await stale.waitCaughtUp();
    await stale.close();
    await w2.write(20);
    await jsm.streams.purge(bare, { seq: w2.lastSeq });
    expect(await rejectionCode(follow('purged-bare', bare, { checkpoints: undefined }))).toBe(
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
    );
    const kept = await OffHeapMap.open<string, unknown>({ dir: join(work, 'purged-bare') });
    expect(new TextDecoder().decode(kept.meta.get(META_POSITION))).toBe('20');
    await kept.close();
    await ahead.close();
  });

  it('checkpointEvery publishes checkpoints as it applies, the newest kept', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 50, 31);
    const ofStream = async () => {
      const found = [];
      for (const c of await checkpoints.list('v1'))
        if ((await checkpoints.manifestIfPresent(c))?.stream === stream) found.push(c);
      return found;
    };
    // Published in the background, every 100 messages: wait until the newest is within 100 of the last message.
    const covered = async () => {
      while (((await ofStream())[0]?.position ?? 0) < writer.lastSeq - 100) await new Promise((r) => setTimeout(r, 50));
    };
    await writer.write(300, 1);
    // All there before the start: the follower applies most of them while its first checkpoint uploads, then has
    // nothing more to apply; the checkpoints still reach its position.
    const f = await follow('every', stream, { checkpointEvery: 100, keepCheckpoints: 2, maxBatchMessages: 20 });
    await f.waitCaughtUp();
    await covered();
    // And as it follows live writes.
    await writer.write(300, 1);
    await f.waitCaughtUp();
    await covered();
    await f.close(); // waits for a publish in flight
    const kept = await ofStream();
    expect(kept.length).toBe(2);
    const fresh = await follow('every-fresh', stream);
    expect(fresh.start).toMatchObject({ kind: 'checkpoint', checkpointId: kept[0]!.id, mapSource: 'image' });
    await fresh.waitCaughtUp();
    expect(mapHex(fresh.map)).toEqual(modelHex(writer.model));
    await fresh.close();
  });

  it('checkpointEvery publishes again for the messages applied while an upload ran, once that upload ends', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 50, 47);
    // The real store, its uploads held until the test lets them go.
    const held = await CheckpointStore.open(servers.nc, { bucket: 'follow-checkpoints' });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const upload = held.upload.bind(held);
    held.upload = async (...args: Parameters<typeof upload>) => {
      await gate;
      return upload(...args);
    };
    await writer.write(150, 1);
    const f = await follow('held', stream, { checkpoints: held, checkpointEvery: 100, maxBatchMessages: 20 });
    await f.waitCaughtUp(); // a publish started at 100-odd messages and waits at the gate
    await writer.write(150, 1);
    await f.waitCaughtUp(); // 150 more applied meanwhile; nothing more will come
    release();
    const at = await newestCheckpointReaching(stream, writer.lastSeq);
    expect(at).toBe(writer.lastSeq);
    await f.close();
  });

  it('checkpointEvery tries a failed publish again without waiting for more messages', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 50, 53);
    // The real store, whose first two uploads fail as an unreachable store would.
    const flaky = await CheckpointStore.open(servers.nc, { bucket: 'follow-checkpoints' });
    const upload = flaky.upload.bind(flaky);
    let failures = 0;
    flaky.upload = async (...args: Parameters<typeof upload>) => {
      if (failures < 2) {
        failures++;
        throw new ReplicaError('HEAPLESS_ERR_REPLICA_UNAVAILABLE', 'object store unreachable (test)');
      }
      return upload(...args);
    };
    const warnings: string[] = [];
    const log = { info: () => {}, warn: (_o: object, msg: string) => warnings.push(msg) };
    await writer.write(120, 1);
    const f = await follow('flaky', stream, { checkpoints: flaky, checkpointEvery: 100, maxBatchMessages: 20, log });
    await f.waitCaughtUp(); // nothing more will be written
    const at = await newestCheckpointReaching(stream, writer.lastSeq);
    expect(failures).toBe(2);
    expect(warnings.filter((w) => w === 'checkpoint not published')).toHaveLength(2);
    expect(at).toBe(writer.lastSeq);
    await f.close();
  });

  it('a message of another schema stops the follower at the message before it; reads go on', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 20, 37);
    const warnings: { details: object; msg: string }[] = [];
    const log = { info: () => {}, warn: (details: object, msg: string) => warnings.push({ details, msg }) };
    const f = await follow('stopped', stream, { log });
    await writer.write(30);
    await f.waitCaughtUp();
    const other = new ModelWriter(servers.nc, stream, 'v9', 20, 41);
    await other.write(1);
    const bad = other.lastSeq;
    await expect(f.waitFor(bad)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH' });
    expect(f.position).toBe(bad - 1);
    // The failure carries its stable code, in the status and in the log.
    const failure = expect.stringMatching(/^HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH: message \d+ has schema 'v9'/);
    expect(f.status()).toMatchObject({ caughtUp: false, failure });
    expect(warnings).toContainEqual({ details: { err: failure, position: bad - 1 }, msg: 'follower stopped' });
    expect(mapHex(f.map)).toEqual(modelHex(writer.model)); // still readable, as of the last message applied
    await f.close();
    // A restart stops at the same message again: it is never skipped.
    const again = await follow('stopped', stream);
    await expect(again.waitFor(bad)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH' });
    expect(readFollowerState(again.map).position).toBe(bad - 1);
    await again.close();
  });

  it('takes over a map already open and being read, resuming from its position with no gap', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 150, 43);
    const f = await follow('handover', stream);
    await writer.write(200);
    await f.waitCaughtUp();
    const at = f.position;
    const modelAt = modelHex(writer.model);
    await f.close();
    // What a server does while NATS cannot be reached: it opens its data alone and serves it.
    const local = await openLocalFollowerData({ dir: join(work, 'handover'), stream, schema: 'v1' });
    expect(local.start).toMatchObject({ kind: 'resume', position: at, mapSource: 'image' });
    expect(mapHex(local.map)).toEqual(modelAt);
    await writer.write(300);
    // A checkpoint far ahead, which a plain open with this maxReplay would load instead of the local data.
    const ahead = await follow('handover-ahead', stream);
    await ahead.waitCaughtUp();
    await ahead.publishCheckpoint();
    await ahead.close();
    let taken: Follower | undefined;
    taken = await follow('handover', stream, {
      localMap: local.map,
      maxReplay: 10,
      onBatch: (messages, b) => countApplications(messages, b, taken!.map),
    });
    expect(taken.map).toBe(local.map);
    expect(taken.start).toMatchObject({ kind: 'resume', reason: null, checkpointId: null, position: at });
    await taken.waitCaughtUp();
    expect(mapHex(local.map)).toEqual(modelHex(writer.model));
    expect(counters(local.map)).toEqual(Object.fromEntries(writer.touches)); // each change applied once
    expect(taken.status()).toMatchObject({ caughtUp: true, lag: 0, position: writer.lastSeq });
    await taken.close();
    expect(() => local.map.get('k0')).toThrow(/closed/i); // the follower owned it
  });

  it('a map taken over that cannot resume is refused: it stays open, as it was, and the caller owns it', async () => {
    const stream = await newStream();
    const writer = new ModelWriter(servers.nc, stream, 'v1', 30, 47);
    const f = await follow('handover-purged', stream, { checkpoints: undefined });
    await writer.write(40);
    await f.waitCaughtUp();
    await f.close();
    const local = await openLocalFollowerData({ dir: join(work, 'handover-purged'), stream, schema: 'v1' });
    const held = mapHex(local.map);
    // Another schema or stream than the map's: not followed into it.
    expect(await rejectionCode(follow('handover-purged', stream, { localMap: local.map, schema: 'v2' }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    await writer.write(20);
    const jsm = await jetstreamManager(servers.nc);
    await jsm.streams.purge(stream, { seq: writer.lastSeq }); // keeps only the last message
    // A checkpoint store is given, yet the map in use is not replaced by a checkpoint or dropped.
    expect(await rejectionCode(follow('handover-purged', stream, { localMap: local.map }))).toBe(
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
    );
    expect(mapHex(local.map)).toEqual(held);
    expect(readFollowerState(local.map).position).toBe(40);
    await local.map.close();
  });

  it('refuses a directory that holds records but no follower position', async () => {
    const stream = await newStream();
    const other = await OffHeapMap.open<string, unknown>({ dir: join(work, 'not-a-follower') });
    other.set('x', 1);
    await other.close();
    expect(await rejectionCode(follow('not-a-follower', stream))).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
  });
});
