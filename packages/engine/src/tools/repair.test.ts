import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../db/engine.js';
import { destroyDatabase } from './destroy.js';
import { LOST_FOLDER, repairDatabase } from './repair.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-repair-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A small deterministic PRNG (mulberry32), so that a failure replays. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = 3000;
/** Puts written last, small enough to stay in the WAL at close (and so to be replayed by the repair). */
const TAIL = 50;
const key = (i: number) => `key${String(i).padStart(5, '0')}`;
const small = { writeBufferSize: 64 * 1024, targetFileSize: 32 * 1024, level0CompactionTrigger: 2 };

/**
 * Writes random puts and deletes (tables at several levels, overwrites across them, a WAL), mirrored in a Map.
 * With `interleave`, a key is then overwritten into level 0 and a compaction beside it rewrites the deeper table
 * that holds its old version, so that tables sharing keys share sequence ranges too (repair must merge).
 */
async function populate(d: string, interleave = false): Promise<Map<string, string>> {
  const model = new Map<string, string>();
  const rand = prng(14);
  let db = await Engine.open(d, small);
  try {
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 6000; i++) {
        const k = key(Math.floor(rand() * KEYS));
        if (rand() < 0.25) {
          await db.delete(k);
          model.delete(k);
        } else {
          const v = `${k}:${round}:${i}:${'x'.repeat(Math.floor(rand() * 120))}`;
          await db.put(k, v);
          model.set(k, v);
        }
      }
      if (round === 1) await db.compactRange();
      if (round === 2) await db.flush();
    }
    if (interleave) {
      await db.compactRange(); // no level-0 table left that would take part in the compaction below
      // Two level-0 tables must stay apart until the explicit compaction.
      await db.close();
      db = await Engine.open(d, { ...small, level0CompactionTrigger: 8 });
      await db.put(key(1), 'fresh');
      model.set(key(1), 'fresh');
      await db.flush();
      for (let i = 0; i < 10; i++) {
        await db.put(`${key(2)}-${i}`, 'beside');
        model.set(`${key(2)}-${i}`, 'beside');
      }
      await db.flush();
      await db.compactRange(Buffer.from(key(2)), Buffer.from(key(3)));
    }
    if (!interleave) {
      // Background compactions may have merged every table into one level by now (they did under CI's load):
      // one more table, in level 0, where a trigger of 8 keeps it.
      await db.close();
      db = await Engine.open(d, { ...small, level0CompactionTrigger: 8 });
      for (let i = 0; i < 10; i++) {
        await db.put(key(i * 11), `last:${i}`);
        model.set(key(i * 11), `last:${i}`);
      }
    }
    // A tail that stays in the WAL: a close flushes a live memtable only past a quarter of writeBufferSize.
    await db.flush();
    for (let i = 0; i < TAIL; i++) {
      const k = key(i * 7);
      const v = `tail:${i}`;
      await db.put(k, v);
      model.set(k, v);
    }
    const levels = db.stats().levels;
    expect(levels.filter((l) => l.files > 0).length).toBeGreaterThanOrEqual(2); // more than level 0 to rebuild
  } finally {
    await db.close();
  }
  return model;
}

async function expectModel(d: string, model: Map<string, string>): Promise<void> {
  const db = await Engine.open(d, small);
  try {
    const got: [string, string][] = [];
    for await (const [k, v] of db.iterator()) got.push([Buffer.from(k).toString(), Buffer.from(v).toString()]);
    expect(got).toEqual([...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    for (let i = 0; i < KEYS; i++) {
      const v = db.getSync(key(i));
      expect(v === undefined ? undefined : Buffer.from(v).toString()).toBe(model.get(key(i)));
    }
    // It writes and reopens as any database does.
    await db.put('after-repair', 'yes');
  } finally {
    await db.close();
  }
  const again = await Engine.open(d, small);
  expect(Buffer.from(again.getSync('after-repair')!).toString()).toBe('yes');
  await again.close();
}

const manifests = (d: string) => readdirSync(d).filter((n) => n.startsWith('MANIFEST-'));

describe('repairDatabase', () => {
  it.each([
    ['kept in level 0', false],
    ['merged', true],
  ])(
    'brings back every record of the tables and logs after MANIFEST and CURRENT are deleted (model check, %s)',
    async (_, interleave) => {
      const model = await populate(dir, interleave);
      for (const m of manifests(dir)) unlinkSync(join(dir, m));
      unlinkSync(join(dir, 'CURRENT'));
      const report = await repairDatabase(dir);
      expect(report.merged).toBe(interleave);
      expect(report.tables).toBeGreaterThan(interleave ? 0 : 1); // merged: one run of 2 MiB tables
      expect(report.logs).toBe(1);
      expect(report.logRecords).toBeGreaterThan(0);
      expect(report.lastSequence).toBe(24_000 + (interleave ? 11 : 10) + TAIL);
      // The replayed log is kept in lost/, never deleted.
      expect(readdirSync(join(dir, LOST_FOLDER)).some((n) => n.endsWith('.log'))).toBe(true);
      await expectModel(dir, model);
    },
  );

  it('gives the newest version of a key whose older version a later compaction rewrote (no stale get)', async () => {
    // The layout: `k`'s old version sits in a deeper table that a compaction rewrote after `k` was overwritten in
    // a level-0 table, so the table holding the OLD version has the larger largest sequence. Read as level 0 by
    // largest sequence, that table would shadow the new version.
    const db = await Engine.open(dir);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    for (const c of letters) await db.put(c, `${c}:old`);
    await db.compactRange(); // every letter in one deeper table, sequences 1..26
    await db.put('k', 'k:new'); // sequence 27, flushed into level 0 alone
    await db.flush();
    for (let i = 0; i < 10; i++) await db.put(`k${i}`, `k${i}`); // beside 'k' in key order, not overlapping it
    await db.flush();
    await db.compactRange(Buffer.from('k0'), Buffer.from('k9')); // rewrites the deeper table, old 'k' included
    expect(Buffer.from(db.getSync('k')!).toString()).toBe('k:new');
    await db.close();
    for (const m of manifests(dir)) unlinkSync(join(dir, m));
    unlinkSync(join(dir, 'CURRENT'));
    expect((await repairDatabase(dir)).merged).toBe(true);
    const repaired = await Engine.open(dir);
    try {
      expect(Buffer.from(repaired.getSync('k')!).toString()).toBe('k:new');
      expect(Buffer.from((await repaired.get('k'))!).toString()).toBe('k:new');
      const all: [string, string][] = [];
      for await (const [k, v] of repaired.iterator()) all.push([Buffer.from(k).toString(), Buffer.from(v).toString()]);
      expect(all.find(([k]) => k === 'k')).toEqual(['k', 'k:new']);
      expect(all.length).toBe(36);
    } finally {
      await repaired.close();
    }
  });

  it('replaces a damaged MANIFEST, which it moves to lost/, and the database opens again with every record', async () => {
    const model = await populate(dir);
    const m = readFileSync(join(dir, 'CURRENT'), 'utf8').trim();
    const bytes = readFileSync(join(dir, m));
    bytes[12] = bytes[12]! ^ 0xff;
    writeFileSync(join(dir, m), bytes);
    await expect(Engine.open(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CORRUPTION' });
    const report = await repairDatabase(dir);
    expect(report.lost).toContainEqual({ file: m, reason: expect.any(String) });
    expect(readFileSync(join(dir, LOST_FOLDER, m))).toEqual(bytes);
    await expectModel(dir, model);
  });

  it('moves a damaged table to lost/ and keeps the rest', async () => {
    const db = await Engine.open(dir);
    await db.put('a', '1');
    await db.flush();
    await db.put('b', '2');
    await db.flush();
    const [newer, older] = db.tableProperties();
    await db.close();
    const path = join(dir, `${String(older!.number).padStart(6, '0')}.sst`);
    const bytes = readFileSync(path);
    bytes[3] = bytes[3]! ^ 0xff; // the first (only) data block
    writeFileSync(path, bytes);
    const report = await repairDatabase(dir);
    expect(report.lost.map((l) => l.file)).toContain(`${String(older!.number).padStart(6, '0')}.sst`);
    expect(report.merged).toBe(false); // level-0 flushes only: kept as they are, renumbered
    expect(report.tables).toBe(1);
    expect(newer).toBeDefined();
    const again = await Engine.open(dir);
    expect(again.getSync('a')).toBeUndefined();
    expect(Buffer.from(again.getSync('b')!).toString()).toBe('2');
    await again.close();
  });

  it('refuses a directory an engine holds open (LOCKED), changing nothing', async () => {
    const db = await Engine.open(dir);
    await db.put('a', '1');
    const before = readdirSync(dir).sort();
    await expect(repairDatabase(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
    expect(readdirSync(dir).sort()).toEqual(before);
    await db.close();
  });
});

describe('repairDatabase on a directory that is not a database', () => {
  it('refuses a missing or empty directory, or one holding none of the engine files, creating nothing', async () => {
    const notFound = { code: 'HEAPLESS_ERR_ENGINE_NOT_FOUND' };
    await expect(repairDatabase(join(dir, 'none'))).rejects.toMatchObject(notFound);
    expect(existsSync(join(dir, 'none'))).toBe(false);
    await expect(repairDatabase(dir)).rejects.toMatchObject(notFound);
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    writeFileSync(join(dir, 'LOCK'), '');
    await expect(repairDatabase(dir)).rejects.toMatchObject(notFound);
    expect(readdirSync(dir).sort()).toEqual(['LOCK', 'notes.txt']);
    // Asked to: an empty database, which opens.
    const made = join(dir, 'made');
    const report = await repairDatabase(made, { createIfMissing: true });
    expect(report.tables).toBe(0);
    const db = await Engine.open(made, { createIfMissing: false });
    await db.close();
  });

  it('keeps the bytes of the CURRENT it replaces in lost/, and leaves files not its own alone', async () => {
    const garbage = Buffer.from('not a manifest name \u0000\u00ff\n', 'latin1');
    writeFileSync(join(dir, 'CURRENT'), garbage);
    writeFileSync(join(dir, '000001.log'), Buffer.alloc(100, 0x5a));
    writeFileSync(join(dir, 'notes.txt'), 'notes');
    writeFileSync(join(dir, 'photo.jpg'), Buffer.from([0xff, 0xd8, 0xff]));
    const report = await repairDatabase(dir);
    expect(report.lost.map((l) => l.file).sort()).toEqual(['000001.log', 'CURRENT']);
    expect(readFileSync(join(dir, LOST_FOLDER, 'CURRENT'))).toEqual(garbage);
    expect(readFileSync(join(dir, LOST_FOLDER, '000001.log'))).toEqual(Buffer.alloc(100, 0x5a));
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('notes');
    expect(readFileSync(join(dir, 'photo.jpg'))).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    // A second repair keeps the first repair's CURRENT (and manifest) too, beside the first copy.
    await repairDatabase(dir);
    const lost = readdirSync(join(dir, LOST_FOLDER));
    expect(lost.filter((n) => n.startsWith('CURRENT')).sort()).toEqual(['CURRENT', 'CURRENT.1']);
    expect(readFileSync(join(dir, LOST_FOLDER, 'CURRENT'))).toEqual(garbage);
  });
});

describe('destroyDatabase', () => {
  it('removes only the engine files, and the directory once empty', async () => {
    const db = await Engine.open(dir);
    await db.put('a', '1');
    await db.flush();
    await db.close();
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    await destroyDatabase(dir);
    expect(readdirSync(dir)).toEqual(['notes.txt']);
    unlinkSync(join(dir, 'notes.txt'));

    const only = join(dir, 'db');
    await (await Engine.open(only)).close();
    await destroyDatabase(only);
    expect(existsSync(only)).toBe(false);
    await destroyDatabase(only); // nothing there: nothing to do
  });

  it('refuses a database an engine holds open (LOCKED), deleting nothing', async () => {
    const db = await Engine.open(dir);
    await db.put('a', '1');
    const before = readdirSync(dir).sort();
    await expect(destroyDatabase(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(Buffer.from(db.getSync('a')!).toString()).toBe('1');
    await db.close();
  });
});
