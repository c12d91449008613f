// Read-only opens and followers beside a writer in this process (test/engine-follower.test.ts runs them in other
// processes): no lock, nothing in the directory changed, writes refused with READ_ONLY, the view as of the open or of
// the last catchUp, and tables a compaction deleted still readable.
import {
  appendFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ErrorCodes } from '../base/errors.js';
import { FileType, parseFileName } from '../base/filenames.js';
import { Engine } from './engine.js';
import { openFollower } from './follower.js';

const dec = new TextDecoder();
const str = (v: Uint8Array | undefined) => (v === undefined ? undefined : dec.decode(v));
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-reader-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Every file of `d` with its bytes and mtime: what a reader must leave as it found it. `LOCK` too, unless
 * `withLock` is false (a writable open takes the lock, writing its pid there, even when it then writes nothing else).
 */
function directoryState(d: string, withLock = true): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(d).sort()) {
    if (name === 'LOCK' && !withLock) continue;
    const path = join(d, name);
    out[name] = `${statSync(path).mtimeMs} ${readFileSync(path).toString('base64')}`;
  }
  return out;
}

async function entries(db: Engine): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of db.iterator()) out.push(`${dec.decode(k)}=${dec.decode(v)}`);
  return out;
}

const tableName = (n: number) => `${String(n).padStart(6, '0')}.sst`;
const tablesOnDisk = () => readdirSync(dir).filter((n) => parseFileName(n)?.type === FileType.Table);
/** The targets of this process's descriptors that are tables (the writer's table cache holds some). */
function tableDescriptors(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.endsWith('.sst')) out.push(target);
    } catch {
      // Closed meanwhile (the listing's own descriptor).
    }
  }
  return out.sort();
}

/** Small memtables and tables, so that a few hundred writes make several flushes and compactions. */
const SMALL = { writeBufferSize: 16 * 1024, targetFileSize: 8 * 1024, compression: 'none' } as const;

describe('read-only open', () => {
  it('opens beside the writer without a lock, sees the state as of the open (WAL included), and changes nothing', async () => {
    const loader = await Engine.open(dir, SMALL);
    for (let i = 0; i < 300; i++) await loader.put(`k${String(i).padStart(4, '0')}`, `v${i} ${'x'.repeat(100)}`);
    await loader.close();
    // A writer whose background work is done (nothing for compaction to do), so that only the reader could change
    // the directory while the test looks.
    const writer = await Engine.open(dir);
    await writer.put('in-wal', 'only in the WAL');
    const before = directoryState(dir);
    const reader = await Engine.open(dir, { readOnly: true });
    expect(str(reader.getSync('k0007'))).toBe(`v7 ${'x'.repeat(100)}`);
    expect(str(reader.getSync('in-wal'))).toBe('only in the WAL');
    expect((await entries(reader)).length).toBe(301);
    expect(directoryState(dir)).toEqual(before);
    // The writer goes on; the read-only view stays as of its open.
    await writer.put('later', 'x');
    await writer.delete('k0007');
    expect(reader.getSync('later')).toBeUndefined();
    expect(str(reader.getSync('k0007'))).toBe(`v7 ${'x'.repeat(100)}`);
    await writer.close();
    const afterWriter = directoryState(dir);
    const second = await Engine.open(dir, { readOnly: true });
    expect(str(second.getSync('later'))).toBe('x');
    expect(second.getSync('k0007')).toBeUndefined();
    await second.close();
    await reader.close();
    expect(directoryState(dir)).toEqual(afterWriter);
  });

  it('refuses writes, flush, compactRange and checkpoint with READ_ONLY, and needs a database', async () => {
    const writer = await Engine.open(dir);
    await writer.put('a', '1');
    await writer.close();
    const before = directoryState(dir);
    const reader = await Engine.open(dir, { readOnly: true });
    const readOnly = { code: ErrorCodes.READ_ONLY };
    await expect(reader.put('b', '2')).rejects.toMatchObject(readOnly);
    await expect(reader.delete('a')).rejects.toMatchObject(readOnly);
    await expect(reader.write([{ type: 'put', key: 'c', value: '3' }])).rejects.toMatchObject(readOnly);
    await expect(reader.batch().put('d', '4').write()).rejects.toMatchObject(readOnly);
    await expect(reader.flush()).rejects.toMatchObject(readOnly);
    await expect(reader.compactRange()).rejects.toMatchObject(readOnly);
    await expect(reader.checkpoint(join(dir, 'copy'))).rejects.toMatchObject(readOnly);
    await expect(reader.catchUp()).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARGUMENT });
    expect(str(reader.getSync('a'))).toBe('1');
    expect(reader.getSync('b')).toBeUndefined();
    await reader.close();
    expect(directoryState(dir)).toEqual(before);
    const empty = join(dir, 'empty');
    await expect(Engine.open(empty, { readOnly: true })).rejects.toMatchObject({ code: ErrorCodes.NOT_FOUND });
    expect(() => statSync(empty)).toThrow(); // not created
  });

  it('refuses, as CorruptionError naming the manifest, a directory that lacks a table its manifest lists', async () => {
    const writer = await Engine.open(dir);
    await writer.put('a', '1');
    await writer.flush();
    await writer.close();
    const table = readdirSync(dir).find((n) => parseFileName(n)?.type === FileType.Table)!;
    unlinkSync(join(dir, table));
    const manifest = readFileSync(join(dir, 'CURRENT'), 'utf8').trim();
    // Not an endless wait for a writer that moves on: nothing changes the manifest, so the table is missing for good.
    await expect(Engine.open(dir, { readOnly: true })).rejects.toMatchObject({
      code: ErrorCodes.CORRUPTION,
      file: join(dir, manifest),
      message: expect.stringContaining(`lists table ${table}, which is missing`),
    });
    await expect(openFollower(dir)).rejects.toMatchObject({ code: ErrorCodes.CORRUPTION });
  });
});

describe('follower', () => {
  it('catches up with the writer: new writes, flushes, compactions; an old iterator keeps reading deleted tables', async () => {
    const writer = await Engine.open(dir, SMALL);
    for (let i = 0; i < 200; i++) await writer.put(`a${String(i).padStart(4, '0')}`, `first ${i} ${'y'.repeat(120)}`);
    await writer.flush();
    const follower = await openFollower(dir);
    const many = await Promise.all([openFollower(dir), openFollower(dir)]);
    expect(str(follower.getSync('a0100'))).toBe(`first 100 ${'y'.repeat(120)}`);
    // An iterator of the view as of now, read after the writer compacted its tables away.
    const old = follower.iterator();
    const oldTables = readdirSync(dir).filter((n) => parseFileName(n)?.type === FileType.Table);
    for (let i = 0; i < 200; i++) await writer.put(`a${String(i).padStart(4, '0')}`, `second ${i} ${'z'.repeat(120)}`);
    await writer.compactRange();
    // The writer lists none of the tables the followers read; they stay on disk while the followers' views hold them.
    const writerTables = writer.tableProperties().map((t) => tableName(t.number));
    expect(oldTables.filter((n) => writerTables.includes(n))).toEqual([]);
    expect(tablesOnDisk().filter((n) => oldTables.includes(n))).toEqual(oldTables);
    expect(str(follower.getSync('a0100'))).toBe(`first 100 ${'y'.repeat(120)}`); // not caught up yet
    await follower.catchUp();
    expect(str(follower.getSync('a0100'))).toBe(`second 100 ${'z'.repeat(120)}`);
    let n = 0;
    for await (const [, v] of old) {
      expect(dec.decode(v)).toMatch(/^first /);
      n++;
    }
    expect(n).toBe(200);
    // Writes only in the WAL, and a delete, reach it at the next catchUp.
    await writer.put('b', 'wal only');
    await writer.delete('a0000');
    await follower.catchUp();
    expect(str(follower.getSync('b'))).toBe('wal only');
    expect(follower.getSync('a0000')).toBeUndefined();
    for (const f of many) {
      expect(str(f.getSync('a0100'))).toBe(`first 100 ${'y'.repeat(120)}`);
      await f.catchUp();
      expect(str(f.getSync('b'))).toBe('wal only');
      await f.close();
    }
    await expect(follower.put('c', '1')).rejects.toMatchObject({ code: ErrorCodes.READ_ONLY });
    // Every view that read them has moved on or closed: the writer's next pass deletes the old tables.
    await writer.put('c', '1');
    await writer.flush();
    await vi.waitFor(() => expect(tablesOnDisk().filter((n) => oldTables.includes(n))).toEqual([]));
    await follower.close();
    await writer.close();
  });

  it('reads a WAL up to its last whole record, and the record being written at the next catchUp', async () => {
    const writer = await Engine.open(dir);
    await writer.put('one', '1');
    await writer.put('two', '2'.repeat(5000));
    await writer.close();
    const log = readdirSync(dir).find((n) => parseFileName(n)?.type === FileType.Log)!;
    const path = join(dir, log);
    const whole = readFileSync(path);
    // The last record cut in its middle, as a reader sees it while the writer's write(2) is under way.
    truncateSync(path, whole.length - 2000);
    const follower = await openFollower(dir);
    expect(str(follower.getSync('one'))).toBe('1');
    expect(follower.getSync('two')).toBeUndefined();
    appendFileSync(path, whole.subarray(whole.length - 2000));
    await follower.catchUp();
    expect(str(follower.getSync('two'))).toBe('2'.repeat(5000));
    await follower.close();
  });
});

describe("the tables of a reader's view", () => {
  it('stay on disk while a read-only engine holds its view, with no descriptor per table, and go once it closes', async () => {
    const writer = await Engine.open(dir, SMALL);
    for (let i = 0; i < 400; i++) await writer.put(`k${String(i).padStart(4, '0')}`, `old ${i} ${'x'.repeat(100)}`);
    await writer.compactRange();
    const before = tableDescriptors();
    const reader = await Engine.open(dir, { readOnly: true });
    expect(tableDescriptors()).toEqual(before); // the open opened no table
    const read = writer.tableProperties().map((t) => tableName(t.number));
    expect(read.length).toBeGreaterThan(3);
    for (let i = 0; i < 400; i++) await writer.put(`k${String(i).padStart(4, '0')}`, `new ${i}`);
    await writer.compactRange();
    await writer.put('more', '1');
    await writer.flush(); // another pass over obsolete files: the reader still holds its view
    expect(tablesOnDisk().filter((n) => read.includes(n))).toEqual(read);
    const got = await entries(reader);
    expect(got).toHaveLength(400);
    for (const [i, e] of got.entries()) expect(e).toBe(`k${String(i).padStart(4, '0')}=old ${i} ${'x'.repeat(100)}`);
    await reader.close();
    await writer.put('more', '2');
    await writer.flush();
    await vi.waitFor(() => expect(tablesOnDisk().filter((n) => read.includes(n))).toEqual([]));
    await writer.close();
  });

  it('are let go by a follower that caught up, while it stays open', async () => {
    const writer = await Engine.open(dir, SMALL);
    for (let i = 0; i < 300; i++) await writer.put(`k${String(i).padStart(4, '0')}`, `old ${i} ${'x'.repeat(100)}`);
    await writer.compactRange();
    const follower = await openFollower(dir);
    const read = writer.tableProperties().map((t) => tableName(t.number));
    for (let i = 0; i < 300; i++) await writer.put(`k${String(i).padStart(4, '0')}`, `new ${i}`);
    await writer.compactRange();
    expect(tablesOnDisk().filter((n) => read.includes(n))).toEqual(read);
    expect(str(follower.getSync('k0007'))).toBe(`old 7 ${'x'.repeat(100)}`);
    await follower.catchUp();
    expect(str(follower.getSync('k0007'))).toBe('new 7');
    await writer.put('more', '1');
    await writer.flush();
    await vi.waitFor(() => expect(tablesOnDisk().filter((n) => read.includes(n))).toEqual([]));
    expect(str(follower.getSync('k0299'))).toBe('new 299');
    await follower.close();
    await writer.close();
  });
});

describe('open and close of a database that takes no writes', () => {
  it('writes and syncs nothing, starts no worker, and its first get opens one table and reads one block', async () => {
    const writer = await Engine.open(dir, SMALL);
    for (let i = 0; i < 400; i++) await writer.put(`k${String(i).padStart(4, '0')}`, `v${i} ${'x'.repeat(100)}`);
    await writer.compactRange();
    await writer.put('in-wal', '1');
    await writer.close();
    const before = directoryState(dir, false);
    const threads = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker');
    const threadsBefore = threads();
    for (const options of [{}, SMALL]) {
      const db = await Engine.open(dir, options);
      expect(db.stats().openTables).toBe(0);
      expect(str(db.getSync('k0123'))).toBe(`v123 ${'x'.repeat(100)}`);
      const s = db.stats();
      expect(s.levels.reduce((n, l) => n + l.files, 0)).toBeGreaterThan(3);
      expect(s.openTables).toBe(1);
      expect(s.blockCache.misses).toBe(1);
      expect(s.workerThreads).toBe(0);
      await db.close();
      expect(db.stats().workerThreads).toBe(0);
      expect(threads()).toEqual(threadsBefore);
      expect(directoryState(dir, false)).toEqual(before);
    }
  });
});
