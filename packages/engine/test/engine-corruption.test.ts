// Corruption: bytes flipped in a table, in the middle of a WAL, in the manifest or CURRENT give a CorruptionError
// naming the file (and offset); never wrong data, never a crash. A torn WAL tail is not corruption.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorruptionError, Engine } from '@heapless/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const dec = new TextDecoder();
const value = (i: number) => `value-${i}-${'y'.repeat(i % 50)}`;
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-corrupt-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function flip(path: string, offset: number): void {
  const bytes = readFileSync(path);
  bytes[offset]! ^= 0x20;
  writeFileSync(path, bytes);
}

function filesEnding(d: string, suffix: string): string[] {
  return readdirSync(d)
    .filter((f) => f.endsWith(suffix) || f.startsWith(suffix))
    .map((f) => join(d, f));
}

/** A copy of an open database's directory, as a crash would leave it (without the LOCK of the live process). */
function crashImage(from: string, to: string): void {
  mkdirSync(to);
  for (const f of readdirSync(from))
    if (f !== 'LOCK' && !f.startsWith('copy')) copyFileSync(join(from, f), join(to, f));
}

async function populate(n: number): Promise<void> {
  const db = await Engine.open(dir, { writeBufferSize: 16 * 1024 });
  for (let i = 0; i < n; i++) await db.put(`key${String(i).padStart(5, '0')}`, value(i));
  await db.compactRange();
  await db.close();
}

describe('engine corruption', () => {
  it('a flipped byte in a table: every read returns the right value or throws CorruptionError naming the table', async () => {
    await populate(3000);
    const tables = filesEnding(dir, '.sst');
    expect(tables.length).toBeGreaterThan(0);
    flip(tables[0]!, 200);
    const db = await Engine.open(dir);
    let corrupt = 0;
    for (let i = 0; i < 3000; i++) {
      try {
        const v = db.getSync(`key${String(i).padStart(5, '0')}`);
        expect(v === undefined ? undefined : dec.decode(v)).toBe(value(i));
      } catch (err) {
        expect(err).toBeInstanceOf(CorruptionError);
        expect((err as CorruptionError).file).toBe(tables[0]);
        corrupt++;
      }
    }
    expect(corrupt).toBeGreaterThan(0);
    await expect(
      (async () => {
        for await (const _ of db.iterator());
      })(),
    ).rejects.toBeInstanceOf(CorruptionError);
    await db.close();
  });

  it('a flipped byte met by a compaction in a worker thread fails the compaction with CorruptionError; writes stop', async () => {
    await populate(3000);
    const tables = filesEnding(dir, '.sst');
    for (const t of tables) flip(t, 300);
    const db = await Engine.open(dir);
    // Level 0 now spans every table below it: the compaction must read them all.
    await db.write([
      { type: 'put', key: 'key', value: 'first' },
      { type: 'put', key: 'key99999', value: 'last' },
    ]);
    const err = await db.compactRange().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CorruptionError);
    expect(tables).toContain((err as CorruptionError).file);
    await expect(db.put('k', 'v')).rejects.toBeInstanceOf(CorruptionError);
    await db.close();
  });

  it('a missing table is CorruptionError at open, naming the manifest; a truncated one at its first read', async () => {
    await populate(500);
    const [table] = filesEnding(dir, '.sst');
    const name = table!.split('/').pop()!;
    const bytes = readFileSync(table!);
    truncateSync(table!, 10);
    // Open checks no table's size (it opens none): the first read of the table does, against the manifest's record.
    const cut = await Engine.open(dir);
    const scan = async () => {
      for await (const _ of cut.iterator()) {
        // reads every table
      }
    };
    await expect(scan()).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_CORRUPTION',
      file: table,
      message: expect.stringContaining(
        `${name} of ${bytes.length} bytes (as the manifest records it), the file has 10`,
      ),
    });
    await cut.close();
    rmSync(table!);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_CORRUPTION',
      message: expect.stringContaining(`${name}, which is missing`),
    });
    writeFileSync(table!, bytes);
    const db = await Engine.open(dir);
    expect(dec.decode(db.getSync('key00001')!)).toBe(value(1));
    await db.close();
  });

  it('a manifest older than the directory (its log gone, a later one there) is CorruptionError; nothing is deleted', async () => {
    const db = await Engine.open(dir);
    for (let i = 0; i < 50; i++) await db.put(`k${i}`, value(i));
    await db.close();
    const [log] = filesEnding(dir, '.log');
    const later = join(dir, '999999.log');
    renameSync(log!, later);
    const before = readdirSync(dir).sort();
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_CORRUPTION',
      file: expect.stringMatching(/MANIFEST-\d+$/),
      message: expect.stringContaining(
        `needs log ${log!.split('/').pop()}, which is missing while the later 999999.log`,
      ),
    });
    expect(readdirSync(dir).sort()).toEqual(before);
    renameSync(later, log!);
    const again = await Engine.open(dir);
    expect(dec.decode(again.getSync('k49')!)).toBe(value(49));
    await again.close();
  });

  it('a flipped byte in the middle of the WAL is CorruptionError naming the log and offset; a torn tail is dropped', async () => {
    const db = await Engine.open(dir);
    for (let i = 0; i < 200; i++) await db.put(`k${i}`, value(i), { sync: i === 199 });
    const image = join(dir, 'copy-image');
    crashImage(dir, image);
    await db.close();
    const [log] = filesEnding(image, '.log');
    const original = readFileSync(log!);

    flip(log!, 40); // inside the first records
    const err = await Engine.open(image).then(
      (e) => e.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).file).toBe(log);
    expect((err as CorruptionError).offset).toBeLessThanOrEqual(40);

    // The same log cut in the middle of its last record: that record is dropped, the rest recovers.
    writeFileSync(log!, original.subarray(0, original.length - 5));
    const recovered = await Engine.open(image);
    expect(recovered.getSync('k199')).toBeUndefined();
    expect(dec.decode(recovered.getSync('k198')!)).toBe(value(198));
    await recovered.close();
  });

  it('a flipped byte in the manifest, or a damaged CURRENT, is CorruptionError at open', async () => {
    await populate(500);
    const [manifest] = filesEnding(dir, 'MANIFEST-');
    const bytes = readFileSync(manifest!);
    flip(manifest!, Math.floor(bytes.length / 2));
    await expect(Engine.open(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CORRUPTION', file: manifest });
    writeFileSync(manifest!, bytes);
    writeFileSync(join(dir, 'CURRENT'), 'MANIFEST-999999\n');
    await expect(Engine.open(dir)).rejects.toBeInstanceOf(CorruptionError);
    // A failed open leaves the directory unlocked.
    writeFileSync(join(dir, 'CURRENT'), `${manifest!.split('/').pop()}\n`);
    const db = await Engine.open(dir);
    expect(dec.decode(db.getSync('key00007')!)).toBe(value(7));
    await db.close();
  });
});
