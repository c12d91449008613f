// The manifest rolled at close (version-set.ts `rollAtClose`): an engine that appended many edits leaves a manifest
// of one, so that the next open parses one record; an engine that appended none writes nothing at close, however
// many edits its manifest holds.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RecordReader } from '../record/record-reader.js';
import { MANIFEST_ROLL_EDITS } from '../version/version-set.js';
import { Engine } from './engine.js';

const dec = new TextDecoder();
const str = (v: Uint8Array | undefined) => (v === undefined ? undefined : dec.decode(v));
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-roll-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Small memtables and tables, so that a few hundred writes make many flushes and compactions (many edits). */
const SMALL = { writeBufferSize: 16 * 1024, targetFileSize: 8 * 1024, compression: 'none' } as const;

const manifests = (d: string) => readdirSync(d).filter((f) => f.startsWith('MANIFEST-'));

/** The records (version edits) in the one manifest of `d`. */
function manifestEdits(d: string): number {
  const names = manifests(d);
  expect(names).toHaveLength(1);
  const reader = new RecordReader(join(d, names[0]!), 'cut');
  let n = 0;
  while (reader.readRecord() !== undefined) n++;
  return n;
}

/** Every file of `d` but LOCK with its mtime and bytes: what a close that writes nothing leaves as it was. */
function directoryState(d: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(d).sort()) {
    if (name === 'LOCK') continue;
    const path = join(d, name);
    out[name] = `${statSync(path).mtimeMs} ${readFileSync(path).toString('base64')}`;
  }
  return out;
}

const value = (i: number) => `v${i} ${'x'.repeat(100)}`;

async function loadMany(db: Engine): Promise<void> {
  for (let i = 0; i < 1500; i++) await db.put(`k${String(i).padStart(4, '0')}`, value(i));
  await db.compactRange();
}

describe('manifest roll at close', () => {
  it('rewrites a manifest of many edits as one when the engine appended to it, losing nothing', async () => {
    const db = await Engine.open(dir, SMALL);
    const manifestBefore = manifests(dir);
    await loadMany(db);
    await db.put('in-wal', 'only in the WAL');
    expect(manifestEdits(dir)).toBeGreaterThan(MANIFEST_ROLL_EDITS);
    await db.close();
    // A new manifest, named by CURRENT; the old one deleted once CURRENT no longer names it.
    expect(manifests(dir)).not.toEqual(manifestBefore);
    expect(manifestEdits(dir)).toBe(1);
    expect(readFileSync(join(dir, 'CURRENT'), 'utf8')).toBe(`${manifests(dir)[0]}\n`);
    const reopened = await Engine.open(dir, SMALL);
    for (let i = 0; i < 1500; i++) expect(str(reopened.getSync(`k${String(i).padStart(4, '0')}`))).toBe(value(i));
    expect(str(reopened.getSync('in-wal'))).toBe('only in the WAL');
    await reopened.close();
  });

  it('writes nothing at the close of an engine that appended no edit, even to a manifest of many', async () => {
    const writer = await Engine.open(dir, SMALL);
    await loadMany(writer);
    await writer.flush();
    // A copy of the live directory keeps the manifest of many edits that the writer's own close would roll.
    const copy = `${dir}-copy`;
    // A compaction the flush started may delete a table while it is copied (as under a user's `cp -r`): copy again.
    for (let attempt = 0; ; attempt++) {
      try {
        cpSync(dir, copy, { recursive: true });
        break;
      } catch (err) {
        rmSync(copy, { recursive: true, force: true });
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 20) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await writer.close();
    try {
      // The first open of the copy may delete what the writer had made obsolete by the time it was copied.
      const first = await Engine.open(copy, SMALL);
      await first.close();
      const edits = manifestEdits(copy);
      expect(edits).toBeGreaterThan(MANIFEST_ROLL_EDITS);
      const before = directoryState(copy);
      for (let round = 0; round < 2; round++) {
        const db = await Engine.open(copy, SMALL);
        expect(str(db.getSync('k0123'))).toBe(value(123));
        await db.close();
        expect(directoryState(copy)).toEqual(before);
      }
      expect(manifestEdits(copy)).toBe(edits);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
