import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../base/errors.js';
import { Engine } from '../db/engine.js';

let top: string;
let dir: string;
let copy: string;
beforeEach(() => {
  top = mkdtempSync(join(tmpdir(), 'heapless-checkpoint-'));
  dir = join(top, 'db');
  copy = join(top, 'copy');
});
afterEach(() => rmSync(top, { recursive: true, force: true }));

const dec = new TextDecoder();

/** The copy's last sequence and whether it holds `key`. */
async function openedCopy(key: string): Promise<{ lastSequence: number; has: boolean }> {
  const c = await Engine.open(copy);
  try {
    return { lastSequence: c.lastSequence, has: c.getSync(key) !== undefined };
  } finally {
    await c.close();
  }
}

describe('checkpoint', () => {
  for (const wal of [true, false]) {
    it(`names in its manifest the last sequence the copy holds, also of a write made during it (wal: ${wal})`, async () => {
      const db = await Engine.open(dir, { wal });
      for (let i = 0; i < 20; i++) await db.put(`k${i}`, `v${i}`);
      const before = db.lastSequence;
      const done = db.checkpoint(copy);
      // Made while the checkpoint waits for the WAL (or a flush): applied, not yet in a file.
      const late = db.put('late', 'x');
      await done;
      await late;
      await db.close();
      const c = await openedCopy('late');
      // Either the copy holds the late write and claims it, or it holds neither: never a sequence without its write.
      expect(c.lastSequence).toBe(c.has ? before + 1 : before);
      const reopened = await Engine.open(copy);
      await reopened.put('next', 'y');
      expect(reopened.lastSequence).toBe(c.lastSequence + 1);
      expect(dec.decode(reopened.getSync('k19'))).toBe('v19');
      // A reader resuming from before the checkpoint (a watcher) finds every write after it, without a gap.
      if (wal)
        expect(await reopened.updatesSince(before)).toMatchObject({ ok: true, updates: c.lastSequence + 1 - before });
      await reopened.close();
    });
  }

  it('refuses a target inside its source, also named through a symbolic link, and writes nothing', async () => {
    const db = await Engine.open(dir);
    await db.put('a', '1');
    const link = join(top, 'link');
    symlinkSync(dir, link);
    const before = readdirSync(dir).sort();
    const invalid = { code: ErrorCodes.INVALID_ARGUMENT };
    await expect(db.checkpoint(join(dir, 'cp'))).rejects.toMatchObject(invalid);
    await expect(db.checkpoint(join(link, 'cp'))).rejects.toMatchObject(invalid);
    await expect(db.checkpoint(link)).rejects.toMatchObject(invalid);
    // A loop of links resolves to nothing: an I/O error of the engine's table, not a bare system error.
    symlinkSync(join(top, 'loop-b'), join(top, 'loop-a'));
    symlinkSync(join(top, 'loop-a'), join(top, 'loop-b'));
    await expect(db.checkpoint(join(top, 'loop-a', 'cp'))).rejects.toMatchObject({ code: ErrorCodes.IO });
    expect(readdirSync(dir).sort()).toEqual(before);
    await db.close();
  });

  it('removes what it wrote when it fails part-way', async () => {
    const db = await Engine.open(dir);
    for (let i = 0; i < 20; i++) await db.put(`k${i}`, `v${i}`);
    await db.flush();
    await db.put('more', '1');
    await db.flush();
    const tables = readdirSync(dir).filter((n) => n.endsWith('.sst'));
    expect(tables.length).toBe(2);
    unlinkSync(join(dir, tables[1]!)); // the second table's link fails after the first was made
    await expect(db.checkpoint(copy)).rejects.toMatchObject({ code: ErrorCodes.IO });
    expect(existsSync(copy)).toBe(false);
    await db.close();
  });
});
