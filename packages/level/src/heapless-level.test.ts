import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HeaplessLevel } from './index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-level-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const key = (i: number) => `k${String(i).padStart(5, '0')}`;

describe('HeaplessLevel', () => {
  it('refuses a location that is not a non-empty string', () => {
    expect(() => new HeaplessLevel('')).toThrow(TypeError);
    expect(() => new HeaplessLevel(42 as unknown as string)).toThrow(TypeError);
  });

  it('hands the engine its own options and ignores options it does not know', async () => {
    // A 4 KiB write buffer flushes tables while the default 4 MiB one holds everything in the WAL.
    const db = new HeaplessLevel(dir, { writeBufferSize: 4096, cacheSize: 8 << 20 } as never);
    await db.batch(
      Array.from({ length: 3000 }, (_, i) => ({ type: 'put' as const, key: key(i), value: 'v'.repeat(40) })),
    );
    await db.close();
    expect(readdirSync(dir).filter((name) => name.endsWith('.sst')).length).toBeGreaterThan(0);
  });

  it('keeps what it stored across a close and an open, encodings and sublevels included', async () => {
    const db = new HeaplessLevel<string, { n: number }>(dir, { valueEncoding: 'json' });
    const users = db.sublevel<string, { name: string }>('users', { valueEncoding: 'json' });
    await db.put('counter', { n: 1 });
    await users.put('1', { name: 'Ada' });
    await db.put('raw', Buffer.from([0, 255]) as never, { valueEncoding: 'buffer' });
    await db.close();

    const again = new HeaplessLevel<string, { n: number }>(dir, { valueEncoding: 'json' });
    expect(await again.get('counter')).toEqual({ n: 1 });
    expect(await again.sublevel<string, { name: string }>('users', { valueEncoding: 'json' }).get('1')).toEqual({
      name: 'Ada',
    });
    expect(await again.get('raw', { valueEncoding: 'view' })).toEqual(new Uint8Array([0, 255]));
    expect(await again.keys().all()).toEqual(['!users!1', 'counter', 'raw']);
    await again.close();
  });

  it('returns strings as stored, a leading U+FEFF and non-ASCII included, in gets and iterators', async () => {
    const db = new HeaplessLevel(dir);
    const values = ['\uFEFFbom first', 'Grüße, 世界 🌍', ''];
    await db.batch(values.map((value, i) => ({ type: 'put' as const, key: `\uFEFF${i}`, value })));
    expect(await db.getMany(values.map((_, i) => `\uFEFF${i}`))).toEqual(values);
    expect(db.getSync('\uFEFF0')).toBe(values[0]);
    expect(await db.iterator().all()).toEqual(values.map((value, i) => [`\uFEFF${i}`, value]));
    await db.close();
  });

  it('clear() over many batches undoes no write made after it was called', async () => {
    const db = new HeaplessLevel(dir);
    await db.batch(Array.from({ length: 5000 }, (_, i) => ({ type: 'put' as const, key: key(i), value: 'old' })));
    const cleared = db.clear({ gte: key(1000) });
    // Made after clear() was called, in its range, among the last keys it deletes.
    const written = db.put(key(4999), 'new');
    await Promise.all([cleared, written]);
    expect(await db.keys().all()).toEqual([...Array.from({ length: 1000 }, (_, i) => key(i)), key(4999)]);
    expect(await db.get(key(4999))).toBe('new');
    await db.close();
  });

  it('clear() with limit and reverse deletes the last keys of the range', async () => {
    const db = new HeaplessLevel(dir);
    await db.batch(Array.from({ length: 10 }, (_, i) => ({ type: 'put' as const, key: key(i), value: 'v' })));
    await db.clear({ lt: key(8), reverse: true, limit: 3 });
    expect(await db.keys().all()).toEqual([0, 1, 2, 3, 4, 8, 9].map(key));
    await db.close();
  });

  it('closing the database closes its iterators and snapshots, and it opens again', async () => {
    const db = new HeaplessLevel(dir);
    await db.put('a', '1');
    const it = db.iterator();
    const snapshot = db.snapshot();
    await db.close();
    await expect(it.next()).rejects.toMatchObject({ code: 'LEVEL_ITERATOR_NOT_OPEN' });
    await db.open();
    await expect(db.get('a', { snapshot })).rejects.toMatchObject({ code: 'LEVEL_SNAPSHOT_NOT_OPEN' });
    expect(await db.get('a')).toBe('1');
    await db.close();
  });
});
