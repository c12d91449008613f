import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from './engine.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-props-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const N = 2000;
const key = (i: number) => `k${String(i).padStart(6, '0')}`; // 7 bytes
const value = (i: number) => `v${String(i).padStart(6, '0')}`.repeat(10); // 70 bytes

async function load(db: Engine, from = 0, to = N): Promise<void> {
  const batch = db.batch();
  for (let i = from; i < to; i++) batch.put(key(i), value(i));
  await batch.write();
}

describe('engine properties and sizes', () => {
  it('counts the tables, their properties and the bytes per level of known data', async () => {
    const db = await Engine.open(dir, { compression: 'none' });
    try {
      await load(db);
      await db.flush();
      const s = db.stats();
      expect(s.levels[0]).toEqual({ files: 1, bytes: expect.any(Number) });
      const [table, ...rest] = db.tableProperties();
      expect(rest).toEqual([]);
      expect(table!.level).toBe(0);
      expect(table!.size).toBe(statSync(join(dir, `${String(table!.number).padStart(6, '0')}.sst`)).size);
      expect(table!.size).toBe(s.levels[0]!.bytes);
      expect(table!.properties).toMatchObject({
        entries: N,
        deletions: 0,
        rawKeySize: N * (7 + 8),
        rawValueSize: N * 70,
        minSequence: 1,
        maxSequence: N,
        compression: 'none',
      });
      // Flushing wrote the one table; the caller wrote the batch (keys, values, framing).
      expect(s.flushes).toBe(1);
      expect(s.flushBytesWritten).toBe(table!.size);
      expect(s.userBytesWritten).toBeGreaterThan(N * 77);
      expect(s.writeAmplification).toBeCloseTo(table!.size / s.userBytesWritten, 10);
      expect(s.readAmplification).toBe(1);
      expect(s.spaceAmplification).toBe(1);

      expect(db.property('heapless.num-files-at-level0')).toBe('1');
      expect(db.property('heapless.num-files-at-level1')).toBe('0');
      expect(db.property('heapless.num-files-at-level99')).toBeUndefined();
      expect(db.property('heapless.no-such-thing')).toBeUndefined();
      expect(db.property('heapless.levelstats')).toMatch(/^\s+0\s+1\s+0\.\d\d$/m);
      expect(db.property('heapless.sstables')).toBe(`L0: ${table!.number}[${key(0)}..${key(N - 1)}]\n`);
      expect(db.property('heapless.table-properties')).toMatch(
        new RegExp(`^L0 ${table!.number}\\.sst .*entries=${N} `),
      );
      expect(db.property('heapless.stats')).toMatch(/^levels\.0\.files: 1$/m);
      expect(db.property('heapless.stats')).toMatch(/^bloomFilter\.checked: 0$/m);

      // Compaction moves it down and is counted.
      await load(db, 0, N / 2); // overwrite half: level 0 then overlaps level 1
      await db.compactRange();
      const after = db.stats();
      expect(after.compactions + after.trivialMoves).toBeGreaterThanOrEqual(1);
      expect(after.levels[0]!.files).toBe(0);
      expect(after.compactionBytesWritten).toBeGreaterThan(0);
      expect(after.writeAmplification).toBeGreaterThan(s.writeAmplification);
      expect(db.tableProperties().reduce((n, t) => n + t.properties.entries, 0)).toBe(N);
    } finally {
      await db.close();
    }
  });

  it('estimates the bytes of a key range from the index blocks and the memtables', async () => {
    const db = await Engine.open(dir, { compression: 'none' });
    try {
      await load(db);
      // Only in the memtable: exactly the keys' and values' bytes of the range.
      expect(db.approximateSize(key(100), key(200))).toBe(100 * 77);
      expect(db.approximateSize(key(100), key(200), { memtables: false })).toBe(0);
      expect(db.approximateSize()).toBe(N * 77);
      await db.flush();
      expect(db.approximateSize(undefined, undefined, { memtables: true, files: false })).toBe(0);
      const total = db.approximateSize();
      expect(total).toBe(db.stats().levels[0]!.bytes);
      // Within a block or two of the share of the data blocks the range covers (blocks of 4 KiB, ~50 entries each).
      const dataSize = db.tableProperties()[0]!.properties.dataSize;
      const half = db.approximateSize(key(0), key(N / 2));
      expect(Math.abs(half - dataSize / 2)).toBeLessThanOrEqual(2 * 4096 + 200);
      const tenth = db.approximateSize(key(N / 2), key(N / 2 + N / 10));
      expect(Math.abs(tenth - dataSize / 10)).toBeLessThanOrEqual(2 * 4096 + 200);
      // Nothing outside the keys, nothing in an empty range.
      expect(db.approximateSize('a', 'b')).toBe(0);
      expect(db.approximateSize('z', 'zz')).toBe(0);
      expect(db.approximateSize(key(300), key(300))).toBe(0);
    } finally {
      await db.close();
    }
  });

  it('counts the bloom filter checks of point gets, and those that spared a block read', async () => {
    for (const bloomBitsPerKey of [10, 0]) {
      const d = join(dir, String(bloomBitsPerKey));
      const db = await Engine.open(d, { bloomBitsPerKey });
      try {
        await load(db);
        await db.flush();
        for (let i = 0; i < 1000; i++) expect(db.getSync(`${key(i)}x`)).toBeUndefined();
        for (let i = 0; i < 100; i++) expect(db.getSync(key(i))).toBeDefined();
        const { bloomFilter, blockCache } = db.stats();
        if (bloomBitsPerKey === 0) expect(bloomFilter).toEqual({ checked: 0, useful: 0 });
        else {
          expect(bloomFilter.checked).toBe(1100);
          // About 1% false positives at 10 bits per key: at least 95% of the misses are spared.
          expect(bloomFilter.useful).toBeGreaterThanOrEqual(950);
          expect(bloomFilter.useful).toBeLessThanOrEqual(1000);
        }
        expect(blockCache.hitRate).toBeCloseTo(blockCache.hits / (blockCache.hits + blockCache.misses), 10);
      } finally {
        await db.close();
      }
    }
  });
});
