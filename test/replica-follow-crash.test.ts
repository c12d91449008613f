// A follower process killed -9 in the middle of applying, many times, while a writer goes on: after each restart it
// resumes at exactly its stored position, and at the end its map equals the model and the per-key counters it
// writes in the same batches as the changes equal the changes published per key: nothing applied twice or missed.
// The same while it loads a checkpoint (its image written around the page cache and opened unread): killed in the
// download, right after the open, or after a few batches.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffHeapMap } from '@heapless/offheap';
import { CheckpointStore, ensureChangeStream, Follower, readFollowerState } from '@heapless/replica';
import { unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUntilKilled } from '../packages/offheap/src/test-support/kill-child.js';
import {
  COUNTER_PREFIX,
  countApplications,
  ModelWriter,
  mapHex,
  modelHex,
} from '../packages/replica/src/testing/follow-support.js';
import { startNatsServer } from '../packages/replica/src/testing/nats-server.js';
import { natsForTests } from '../packages/replica/src/testing/replica-support.js';

const CHILD = new URL('./replica-follow-child.mjs', import.meta.url).pathname;
const CYCLES = 8;

const servers = natsForTests(startNatsServer);
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'heapless-follow-crash-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('a follower killed -9 during apply', () => {
  it(`restarts ${CYCLES} times to its stored position with every change applied exactly once`, async () => {
    const stream = 'crash';
    await ensureChangeStream(servers.nc, { name: stream });
    const writer = new ModelWriter(servers.nc, stream, 'v1', 200, 23);
    const dir = join(work, 'follower');
    await writer.write(400);
    let stored = 0;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const writing = writer.write(300);
      let batches = 0;
      const killAfter = 2 + ((cycle * 7) % 9);
      let started: number | undefined;
      await runUntilKilled(CHILD, [servers.nats.nodes[0]!.url, dir, stream], (line) => {
        const [what, a] = line.split(' ');
        if (what === 'start') started = Number(a);
        return what === 'batch' && ++batches >= killAfter;
      });
      await writing;
      // It started where the previous run's last durable batch left it, never before.
      expect(started).toBeGreaterThanOrEqual(stored);
      stored = await expectCountersMatchPosition(dir, stream);
    }
    expect(await expectConverged(dir, stream, writer)).toBe('resume');
  });
});

describe('a follower killed -9 while it loads a checkpoint', () => {
  it('restarts, each time, to data whose counters match its position, and converges on the model', async () => {
    const stream = 'crash-checkpoint';
    const bucket = 'crash-checkpoints';
    await ensureChangeStream(servers.nc, { name: stream });
    const checkpoints = await CheckpointStore.open(servers.nc, { bucket });
    const writer = new ModelWriter(servers.nc, stream, 'v1', 300, 31);
    // The follower that publishes the checkpoints, counting its applications as the child does.
    let source: Follower | undefined;
    source = await Follower.open({
      nc: servers.nc,
      dir: join(work, 'source'),
      stream,
      schema: 'v1',
      checkpoints,
      onBatch: (messages, b) => countApplications(messages, b, source!.map),
    });
    const dir = join(work, 'loading');
    // Killed while downloading (just after the plan), just after the open, and after a few batches.
    const killAt = ['log follower start: checkpoint', 'start', 'batch', 'batch', 'batch'];
    const loads: string[] = [];
    for (let cycle = 0; cycle < 6; cycle++) {
      // More than MAX_REPLAY behind, with a newer checkpoint: every start takes the checkpoint path.
      await writer.write(200);
      await source.waitCaughtUp();
      await source.publishCheckpoint();
      await writer.write(40);
      const target = killAt[cycle % killAt.length]!;
      let batches = 0;
      await runUntilKilled(CHILD, [servers.nats.nodes[0]!.url, dir, stream, bucket, '50'], (line) => {
        if (line.startsWith('start ')) loads.push(line.split(' ')[2]!);
        if (target === 'batch') return line.startsWith('batch ') && ++batches >= 1 + (cycle % 3);
        return line === target || line.startsWith(`${target} `);
      });
      if (!existsSync(dir)) continue; // killed between the old data's removal and the new one's rename
      await expectCountersMatchPosition(dir, stream);
    }
    // Every run that got as far as consuming had loaded a checkpoint (the others were killed in the download).
    expect(loads.length).toBeGreaterThanOrEqual(3);
    expect(new Set(loads)).toEqual(new Set(['checkpoint']));
    await source.close();
    await expectConverged(dir, stream, writer);
  });
});

/**
 * Opens the map a killed follower left in `dir` and checks that its records and counters agree with its stored
 * position: every change up to it counted once. Returns the position.
 */
async function expectCountersMatchPosition(dir: string, stream: string): Promise<number> {
  const map = await OffHeapMap.open<string, unknown>({ dir });
  const position = readFollowerState(map).position ?? 0;
  let counted = 0;
  for (const key of map.keys()) if (key.startsWith(COUNTER_PREFIX)) counted += unpack(map.getBytes(key)!) as number;
  await map.close();
  expect(counted).toBe(await changesUpTo(position, stream));
  return position;
}

/**
 * A follower opened on `dir` catches up and equals the model, each key's counter equal to the changes published for
 * it (nothing applied twice or missed). Returns how it started.
 */
async function expectConverged(dir: string, stream: string, writer: ModelWriter): Promise<string> {
  let f: Follower | undefined;
  f = await Follower.open({
    nc: servers.nc,
    dir,
    stream,
    schema: 'v1',
    onBatch: (messages, b) => countApplications(messages, b, f!.map),
  });
  try {
    await f.waitCaughtUp();
    expect(mapHex(f.map)).toEqual(modelHex(writer.model));
    const counters: Record<string, number> = {};
    for (const key of f.map.keys())
      if (key.startsWith(COUNTER_PREFIX))
        counters[key.slice(COUNTER_PREFIX.length)] = unpack(f.map.getBytes(key)!) as number;
    expect(counters).toEqual(Object.fromEntries(writer.touches));
    return f.start.kind;
  } finally {
    await f.close();
  }
}

/** Changes in the stream's messages 1..`seq`, read back from the stream. */
async function changesUpTo(seq: number, stream: string): Promise<number> {
  if (seq === 0) return 0;
  const { consumeChanges } = await import('@heapless/replica');
  let n = 0;
  let done!: () => void;
  const reached = new Promise<void>((resolve) => {
    done = resolve;
  });
  const reader = await consumeChanges(servers.nc, {
    stream,
    after: 0,
    handler: (batch) => {
      for (const m of batch.messages) if (m.seq <= seq) n += m.changes.length;
      if (batch.lastSeq >= seq) done();
    },
  });
  await reached;
  await reader.close();
  return n;
}
