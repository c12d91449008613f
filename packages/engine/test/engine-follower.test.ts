// Read-only opens and a follower in this process beside a writer in another (engine-follower-child.mjs) that writes
// under load and compacts: every view is a state the writer had (a model check of its invariant: `count` equals the
// number of k/ keys, each holding the value the writer wrote), catchUp() reaches every write the writer had
// acknowledged before it was called, and an iterator opened early keeps reading the tables compaction deleted since.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, openFollower, type Snapshot } from '@heapless/engine';
import { describe, expect, it, vi } from 'vitest';

const CHILD = fileURLToPath(new URL('./engine-follower-child.mjs', import.meta.url));
const BATCHES = 1500;
const dec = new TextDecoder();
const key = (i: number) => `k/${String(i).padStart(6, '0')}`;
const value = (i: number) => `v${i}-${'p'.repeat((i * 37) % 400)}`;

/** Checks the writer's invariant in `db`'s view (as of `snapshot`, or now); returns its count. */
async function checkView(db: Engine, snapshot?: Snapshot): Promise<number> {
  const countBytes = db.getSync('count', { snapshot });
  const count = countBytes === undefined ? 0 : Number(dec.decode(countBytes));
  let i = 0;
  for await (const [k, v] of db.iterator({ gte: 'k/', lt: 'k0', snapshot })) {
    expect(dec.decode(k)).toBe(key(i));
    expect(dec.decode(v)).toBe(value(i));
    i++;
  }
  expect(i).toBe(count);
  return count;
}

const tables = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.sst'));

describe('read-only and follower opens beside a writer in another process', () => {
  it('always see a state the writer had, catch up to what it acknowledged, and keep deleted tables readable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-follower-'));
    try {
      const child = spawn(process.execPath, [CHILD, dir, String(BATCHES)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let acked = 0;
      let done = false;
      let stderr = '';
      let firstAck: () => void = () => {};
      const started = new Promise<void>((resolve) => {
        firstAck = resolve;
      });
      let pending = '';
      child.stdout.on('data', (d: Buffer) => {
        pending += d.toString();
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (line === 'done') done = true;
          else if (line.startsWith('acked ')) acked = Number(line.slice(6));
          firstAck();
        }
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await started;

      const follower = await openFollower(dir);
      const earlyCount = await checkView(follower);
      const early = follower.iterator({ gte: 'k/', lt: 'k0' });
      const earlyTables = tables(dir);
      let rounds = 0;
      let last = earlyCount;
      while (!done) {
        const ackedBefore = acked;
        await follower.catchUp();
        const snapshot = follower.snapshot();
        const count = await checkView(follower, snapshot);
        snapshot.release();
        expect(count).toBeGreaterThanOrEqual(ackedBefore);
        expect(count).toBeGreaterThanOrEqual(last);
        last = count;
        if (rounds % 5 === 0) {
          const reader = await Engine.open(dir, { readOnly: true });
          expect(await checkView(reader)).toBeGreaterThanOrEqual(ackedBefore);
          await reader.close();
        }
        rounds++;
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await exited).toBe(0);
      expect(stderr).toBe('');
      await follower.catchUp();
      expect(await checkView(follower)).toBe(BATCHES);
      // The early iterator's tables are gone from the directory, and it still reads its view whole.
      expect(earlyTables.filter((n) => tables(dir).includes(n))).toEqual([]);
      let i = 0;
      for await (const [k, v] of early) {
        expect([dec.decode(k), dec.decode(v)]).toEqual([key(i), value(i)]);
        i++;
      }
      expect(i).toBe(earlyCount);
      expect(rounds).toBeGreaterThan(3);
      await follower.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a reader killed -9 holds back no deletion: the kernel drops its pin on READERS', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-reader-kill-'));
    const writer = await Engine.open(dir, { writeBufferSize: 16 * 1024, targetFileSize: 8 * 1024 });
    try {
      for (let i = 0; i < 300; i++) await writer.put(key(i), value(i));
      await writer.compactRange();
      const read = tables(dir);
      // A read-only engine in another process, holding its view until it is killed.
      const reader = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { Engine } from '@heapless/engine';
           const db = await Engine.open(process.argv[1], { readOnly: true });
           process.stdout.write(new TextDecoder().decode(db.getSync('${key(7)}')) + '\\n');
           setInterval(() => {}, 1000);`,
          dir,
        ],
        { cwd: fileURLToPath(new URL('.', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const first = await new Promise<string>((resolve) =>
        reader.stdout.once('data', (d: Buffer) => resolve(d.toString())),
      );
      expect(first.trim()).toBe(value(7));
      for (let i = 0; i < 300; i++) await writer.put(key(i), 'new');
      await writer.compactRange();
      expect(tables(dir).filter((n) => read.includes(n))).toEqual(read); // kept for the reader
      const exited = new Promise((resolve) => reader.once('exit', resolve));
      reader.kill('SIGKILL');
      await exited;
      await writer.put('more', '1');
      await writer.flush(); // the next pass over obsolete files
      await vi.waitFor(() => expect(tables(dir).filter((n) => read.includes(n))).toEqual([]));
    } finally {
      await writer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
