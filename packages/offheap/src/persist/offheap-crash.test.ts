import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../index.js';
import { runUntilKilled } from '../test-support/kill-child.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'offheap-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * The child writes key i -> { i, pad } forever, and every third write prints `ack i` once `durable()` resolved for
 * it: with sync, the write is on disk; without, it has been handed to the OS. The parent kills it with SIGKILL once
 * enough lines arrived, mid-stream, so writes are in flight at the moment of the kill.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
const [dir, mode] = process.argv.slice(2);
const map = await OffHeapMap.open({ dir, sync: mode === 'sync' });
for (let i = 0; ; i++) {
  map.set('key:' + i, { i, pad: 'x'.repeat(i % 300) });
  if (i % 3 === 0) { await map.durable(); process.stdout.write('ack ' + i + '\\n'); }
}
`;
const childFile = join(root, 'child.mjs');
writeFileSync(childFile, CHILD);

/** Runs the child until `lines` lines arrived, SIGKILLs it, returns the last number it printed. */
async function runAndKill(dir: string, mode: 'sync' | 'nosync', lines: number): Promise<number> {
  let last = -1;
  let seen = 0;
  await runUntilKilled(childFile, [dir, mode], (line) => {
    last = Number(line.split(' ')[1]);
    return ++seen === lines;
  });
  return last;
}

describe('a persisted OffHeapMap killed with SIGKILL', () => {
  it('holds every acknowledged sync write after reopen', async () => {
    const dir = join(root, 'sync');
    const acked = await runAndKill(dir, 'sync', 400);
    expect(acked).toBeGreaterThan(0);
    const map = await OffHeapMap.open<string, { i: number; pad: string }>({ dir });
    try {
      for (let i = 0; i <= acked; i++) expect(map.get(`key:${i}`)).toEqual({ i, pad: 'x'.repeat(i % 300) });
      // and what survived beyond the last ack is a prefix: no holes
      expect(map.size).toBeGreaterThan(acked);
      for (let i = 0; i < map.size; i++) expect(map.has(`key:${i}`)).toBe(true);
    } finally {
      await map.close();
    }
  });

  it('without sync holds every write durable() acknowledged, and what survived is a prefix', async () => {
    const dir = join(root, 'nosync');
    const acked = await runAndKill(dir, 'nosync', 1000);
    expect(acked).toBeGreaterThan(0);
    const map = await OffHeapMap.open<string, { i: number; pad: string }>({ dir });
    try {
      const n = map.size;
      expect(n).toBeGreaterThan(acked);
      for (let i = 0; i < n; i++) expect(map.get(`key:${i}`)).toEqual({ i, pad: 'x'.repeat(i % 300) });
      expect(map.has(`key:${n}`)).toBe(false);
    } finally {
      await map.close();
    }
  });

  it('after reopening from its map image: the image is caught up from the WAL after it, every acknowledged write is there', async () => {
    const dir = join(root, 'image');
    const first = await OffHeapMap.open<string, unknown>({ dir });
    for (let i = 0; i < 2000; i++) first.set(`pre:${i}`, { i });
    await first.close();
    const acked = await runAndKill(dir, 'sync', 300); // the child loaded the image, then wrote and was killed
    const map = await OffHeapMap.open<string, unknown>({ dir });
    try {
      // The image of the clean close, then the child's writes replayed from the WAL its pin kept: no scan.
      expect(map.openStats.source).toBe('image');
      expect(map.openStats.replayed).toBeGreaterThan(acked);
      for (let i = 0; i < 2000; i++) expect(map.get(`pre:${i}`)).toEqual({ i });
      for (let i = 0; i <= acked; i++) expect(map.get(`key:${i}`)).toEqual({ i, pad: 'x'.repeat(i % 300) });
    } finally {
      await map.close();
    }
  });
});
