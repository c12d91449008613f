// A follower process killed -9 in the middle of applying, many times, while a writer goes on: after each restart it
// resumes at exactly its stored position, and at the end its map equals the model and the per-key counters it
// writes in the same batches as the changes equal the changes published per key: nothing applied twice or missed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffHeapMap } from '@heapless/offheap';
import { ensureChangeStream, Follower, readFollowerState } from '@heapless/replica';
import { unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUntilKilled } from './kill-child.js';
import { startNatsServer } from './nats-server.js';
import { COUNTER_PREFIX, countApplications, ModelWriter, mapHex, modelHex } from './replica-follow-support.js';
import { natsForTests } from './replica-support.js';

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
      const map = await OffHeapMap.open<string, unknown>({ dir });
      const state = readFollowerState(map);
      stored = state.position!;
      // Records and counters agree with the stored position: every change up to it counted once.
      let counted = 0;
      for (const key of map.keys()) if (key.startsWith(COUNTER_PREFIX)) counted += unpack(map.getBytes(key)!) as number;
      await map.close();
      expect(counted).toBe(await changesUpTo(stored, stream));
    }
    let f: Follower | undefined;
    f = await Follower.open({
      nc: servers.nc,
      dir,
      stream,
      schema: 'v1',
      onBatch: (messages, b) => countApplications(messages, b, f!.map),
    });
    expect(f.start.kind).toBe('resume');
    await f.waitCaughtUp();
    expect(mapHex(f.map)).toEqual(modelHex(writer.model));
    const counters: Record<string, number> = {};
    for (const key of f.map.keys())
      if (key.startsWith(COUNTER_PREFIX))
        counters[key.slice(COUNTER_PREFIX.length)] = unpack(f.map.getBytes(key)!) as number;
    expect(counters).toEqual(Object.fromEntries(writer.touches));
    await f.close();
  });
});

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
