import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../db/engine.js';
import { decodeFooter, FOOTER_SIZE } from '../table/table-format.js';
import { verifyDatabase } from './verify.js';

let root: string;
let dir: string;
/** The database's table and what the damage tests need of it. */
let table: { name: string; size: number; dataBlocks: number; filterOffset: number; indexOffset: number };
let log: string;
let manifest: string;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'heapless-verify-'));
  dir = join(root, 'db');
  const db = await Engine.open(dir, { compression: 'snappy' });
  const batch = db.batch();
  for (let i = 0; i < 2000; i++) batch.put(`k${String(i).padStart(6, '0')}`, `value ${i} `.repeat(8));
  await batch.write();
  await db.flush();
  for (let i = 0; i < 10; i++) await db.put(`w${i}`, 'in the log');
  const [t] = db.tableProperties();
  await db.close();
  const name = `${String(t!.number).padStart(6, '0')}.sst`;
  const bytes = readFileSync(join(dir, name));
  const footer = decodeFooter(bytes, bytes.length - FOOTER_SIZE, name, bytes.length - FOOTER_SIZE);
  table = {
    name,
    size: bytes.length,
    dataBlocks: t!.properties.dataBlocks,
    filterOffset: t!.properties.dataSize, // the filter block follows the data blocks
    indexOffset: footer.index.offset,
  };
  log = readdirSync(dir).find((n) => n.endsWith('.log'))!;
  manifest = readFileSync(join(dir, 'CURRENT'), 'utf8').trim();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the database with the byte at `offset` of `name` flipped; returns the copy's directory. */
function damaged(name: string, offset: number): string {
  const copy = join(root, `copy-${name}-${offset}`);
  cpSync(dir, copy, { recursive: true });
  const bytes = readFileSync(join(copy, name));
  bytes[offset] = bytes[offset]! ^ 0x20;
  writeFileSync(join(copy, name), bytes);
  return copy;
}

describe('verifyDatabase', () => {
  it('passes an intact database, naming every file it checked', async () => {
    const report = await verifyDatabase(dir);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    const byKind = Object.fromEntries(report.files.map((f) => [f.kind, f]));
    expect(byKind.table).toMatchObject({ file: join(dir, table.name), checked: table.dataBlocks });
    expect(byKind.log).toMatchObject({ file: join(dir, log), checked: 10 });
    expect(byKind.manifest!.checked).toBeGreaterThan(0);
    expect(byKind.current!.checked).toBe(1);
    expect(table.dataBlocks).toBeGreaterThan(3);
  });

  const cases: [string, () => { name: string; flip: number; offset: number }][] = [
    ['a table data block', () => ({ name: table.name, flip: 5, offset: 0 })],
    ['the index block', () => ({ name: table.name, flip: table.indexOffset + 2, offset: table.indexOffset })],
    ['the filter block', () => ({ name: table.name, flip: table.filterOffset + 2, offset: table.filterOffset })],
    ['the footer', () => ({ name: table.name, flip: table.size - 30, offset: table.size - FOOTER_SIZE })],
    ['a WAL record', () => ({ name: log, flip: 7 + 4, offset: 0 })],
    ['a MANIFEST record', () => ({ name: manifest, flip: 7 + 2, offset: 0 })],
    ['CURRENT', () => ({ name: 'CURRENT', flip: 3, offset: 0 })],
  ];
  for (const [what, where] of cases) {
    it(`finds a flipped byte in ${what}, naming the file and offset`, async () => {
      const { name, flip, offset } = where();
      const copy = damaged(name, flip);
      const report = await verifyDatabase(copy);
      expect(report.ok).toBe(false);
      expect(report.problems).toContainEqual({ file: join(copy, name), offset, message: expect.any(String) });
      // Nothing else is blamed (CURRENT's check reads the manifest, so it names the manifest too).
      for (const p of report.problems) expect(p.file).toBe(join(copy, name));
    });
  }

  it('checks the other data blocks past a bad one', async () => {
    const copy = damaged(table.name, 5);
    const report = await verifyDatabase(copy);
    expect(report.problems).toHaveLength(1);
    expect(report.files.find((f) => f.kind === 'table')!.checked).toBe(table.dataBlocks - 1);
  });

  it('skips a table the manifest does not list (one a live writer may be writing), however damaged', async () => {
    writeFileSync(join(dir, '000900.sst'), 'half a table');
    const report = await verifyDatabase(dir);
    expect(report.problems).toEqual([]);
    expect(report.files).toContainEqual({
      file: join(dir, '000900.sst'),
      kind: 'table',
      checked: 0,
      skipped: expect.stringContaining('not a table of the manifest'),
    });
    expect(report.files.find((f) => f.file === join(dir, table.name))).toMatchObject({ checked: table.dataBlocks });
  });

  it('skips a file deleted while it runs (a live writer retiring it), and still finds damage elsewhere', async () => {
    const copy = damaged(log, 7 + 4);
    const gone = join(copy, table.name);
    const report = await verifyDatabase(copy, {
      onProgress: (_done, _total, file) => {
        // The WAL sorts first; the table is deleted before its turn.
        if (file === join(copy, log)) rmSync(gone);
      },
    });
    expect(report.files).toContainEqual({ file: gone, kind: 'table', checked: 0, skipped: 'deleted while verify ran' });
    expect(report.problems).toEqual([{ file: join(copy, log), offset: 0, message: expect.any(String) }]);
  });

  it('reports progress per file, and refuses a directory without a database', async () => {
    const seen: number[] = [];
    await verifyDatabase(dir, { onProgress: (done) => seen.push(done) });
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
    expect(seen.length).toBeGreaterThanOrEqual(4);
    await expect(verifyDatabase(join(root, 'none'))).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_NOT_FOUND' });
  });
});
