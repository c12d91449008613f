import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../index.js';
import { runUntilKilled } from '../test-support/kill-child.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'offheap-batch-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * The child resumes from the stored offset (metadata `offset`, u32 LE: records rec:0 .. rec:offset-1 exist) and
 * writes batches of 1..60 records with the new offset in the same batch, forever, printing `ack <offset>` once a
 * batch is durable; eight batches are in flight at once, so that with records of 1..8 KiB one turn's writes pass
 * the WAL's 1 MiB write threshold and take several write(2)s. The parent kills it with SIGKILL after a random number
 * of acks while it goes on writing, so batches are mid-way into the WAL at the moment of the kill.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
const [dir, mode] = process.argv.slice(2);
const map = await OffHeapMap.open({ dir, sync: mode === 'sync', threads: 1 });
const stored = map.meta.get('offset');
let offset = stored === undefined ? 0 : Buffer.from(stored).readUInt32LE(0);
const pending = [];
for (let round = 0; ; round++) {
  const n = 1 + ((round * 7919 + offset) % 60);
  const b = map.batch();
  for (let i = offset; i < offset + n; i++) b.set('rec:' + i, { i, pad: 'p'.repeat(1024 + ((i * 2741) % 7168)) });
  offset += n;
  const o = Buffer.alloc(4);
  o.writeUInt32LE(offset, 0);
  b.setMeta('offset', o);
  const at = offset;
  pending.push(b.write().then(() => process.stdout.write('ack ' + at + '\\n')));
  if (pending.length === 8) await Promise.all(pending.splice(0));
}
`;
const childFile = join(root, 'child.mjs');
writeFileSync(childFile, CHILD);

/** Runs the child until `acks` lines arrived, SIGKILLs it, returns the last offset it acknowledged. */
async function runAndKill(dir: string, mode: 'sync' | 'nosync', acks: number): Promise<number> {
  let last = -1;
  let seen = 0;
  await runUntilKilled(childFile, [dir, mode], (line) => {
    last = Number(line.split(' ')[1]);
    return ++seen === acks;
  });
  return last;
}

/** The stored offset, and checks the records are exactly rec:0 .. rec:offset-1 (none ahead, none missing). */
async function checkPrefix(dir: string): Promise<number> {
  const map = await OffHeapMap.open<string, { i: number; pad: string }>({ dir, threads: 1 });
  try {
    const stored = map.meta.get('offset');
    const offset = stored === undefined ? 0 : Buffer.from(stored).readUInt32LE(0);
    expect(map.size).toBe(offset);
    for (let i = 0; i < offset; i++)
      expect(map.get(`rec:${i}`)).toEqual({ i, pad: 'p'.repeat(1024 + ((i * 2741) % 7168)) });
    expect(map.has(`rec:${offset}`)).toBe(false);
    return offset;
  } finally {
    await map.close();
  }
}

describe('batches of records and their offset, killed with SIGKILL at random points', () => {
  for (const mode of ['nosync', 'sync'] as const) {
    it(`(${mode}) reopen to records that are exactly the stored offset's prefix, every time`, async () => {
      const dir = join(root, mode);
      let previous = 0;
      for (let cycle = 0; cycle < 8; cycle++) {
        const acked = await runAndKill(dir, mode, 1 + Math.floor(Math.random() * 40));
        const offset = await checkPrefix(dir);
        // Every acknowledged batch survived; nothing is lost across cycles.
        expect(offset).toBeGreaterThanOrEqual(acked);
        expect(offset).toBeGreaterThanOrEqual(previous);
        previous = offset;
      }
    });
  }
});
