import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe } from './serve-child.js';

const root = mkdtempSync(join(tmpdir(), 'kv-batch-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Batches sent at once: what they hold is written in one turn of the server. */
const IN_FLIGHT = 8;
type Kv = Awaited<ReturnType<typeof connect<typeof KvActor>>>;
/** How the offset travels: as metadata of a `batch`, or as the record `offset` of the same `setMany`. */
type Mode = 'batch' | 'setMany';

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n, 0);
  return b;
};
/** Values of 1..8 KiB: the writes of one turn pass the WAL's 1 MiB write threshold, so a turn takes several write(2)s. */
const recordValue = (i: number) => Buffer.from(`value ${i} ${'v'.repeat(1024 + ((i * 2741) % 7168))}`);

/** The stored offset of `dir` (the server is dead), after checking the records are exactly its prefix. */
async function checkPrefix(dir: string, mode: Mode): Promise<number> {
  const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
  try {
    const stored = mode === 'batch' ? map.meta.get('offset') : map.getBytes('offset');
    const offset = stored === undefined ? 0 : Buffer.from(stored).readUInt32LE(0);
    expect(map.size).toBe(offset + (mode === 'setMany' && stored !== undefined ? 1 : 0));
    for (let i = 0; i < offset; i++) expect(Buffer.from(map.getBytes(`rec:${i}`)!).equals(recordValue(i))).toBe(true);
    expect(map.has(`rec:${offset}`)).toBe(false);
    return offset;
  } finally {
    await map.close();
  }
}

/**
 * Writes batches of 1..300 records (up to 2 MiB, past the WAL's 1 MiB write threshold, so one batch can take two
 * write(2)s) with the offset after them from `offset` on, keeping IN_FLIGHT unanswered at all times (each answer
 * sends the next), so the server is always mid-way through frames; soon after `acks` answers (a random delay) it
 * SIGKILLs the server, and returns the last acknowledged offset once every call has settled.
 */
async function writeUntilKilled(kv: Kv, kill: () => void, mode: Mode, from: number, acks: number): Promise<number> {
  let offset = from;
  let acked = from;
  let answered = 0;
  let dead = false;
  const next = (): Promise<void> | undefined => {
    if (dead) return undefined;
    const n = 1 + ((offset * 31) % 300);
    const records: [string, Uint8Array][] = [];
    for (let i = offset; i < offset + n; i++) records.push([`rec:${i}`, recordValue(i)]);
    offset += n;
    const at = offset;
    const call =
      mode === 'batch'
        ? kv.batch(
            records.map(([key, value]) => ({ type: 'set' as const, key, value })),
            { meta: { offset: u32(at) } },
          )
        : kv.setMany([...records, ['offset', u32(at)]]);
    return call.then(
      () => {
        acked = Math.max(acked, at);
        if (++answered === acks) setTimeout(kill, Math.random() * 50);
        return next();
      },
      () => {
        dead = true;
      },
    );
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, next));
  return acked;
}

describe('heapless serve killed with SIGKILL while clients write batches with their offset', () => {
  for (const mode of ['batch', 'setMany'] as const) {
    it(`(${mode}) restarts to records that are exactly the stored offset's prefix, every time`, async () => {
      const dir = join(root, mode);
      let offset = 0;
      for (let cycle = 0; cycle < 5; cycle++) {
        const child = await startServe(['--data', dir]);
        const kv = await connect<typeof KvActor>(child.url, { reconnect: false });
        const acks = 2 + Math.floor(Math.random() * 30);
        const acked = await writeUntilKilled(kv, () => child.proc.kill('SIGKILL'), mode, offset, acks);
        await child.exited;
        await kv.close();
        const stored = await checkPrefix(dir, mode);
        expect(stored).toBeGreaterThanOrEqual(acked);
        offset = stored;
      }
      expect(offset).toBeGreaterThan(0);
    });
  }
});
