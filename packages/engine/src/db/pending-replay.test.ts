import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptionError } from '../base/errors.js';
import { RecordWriter } from '../record/record-writer.js';
import { Engine } from './engine.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-pending-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const str = (v: Uint8Array | undefined) => (v === undefined ? undefined : Buffer.from(v).toString());
const turn = () => new Promise((r) => setImmediate(r));

/** Every file with its size and bytes: what an open and close must leave as they were. */
function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dir).sort()) {
    if (f === 'LOCK') continue;
    out[f] = `${statSync(join(dir, f)).size}:${readFileSync(join(dir, f)).toString('base64')}`;
  }
  return out;
}

/**
 * A database whose WAL holds `n` puts and deletes (in one run, so merged into few records) after a clean close: a
 * memtable under a quarter of the write buffer stays in its WAL (at most ~15,000 of these small entries).
 */
async function withWal(n: number): Promise<Map<string, string>> {
  const model = new Map<string, string>();
  const db = await Engine.open(dir);
  const writes: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const k = `k${(i * 7919) % 5000}`;
    if (i % 7 === 3) {
      model.delete(k);
      writes.push(db.delete(k));
    } else {
      model.set(k, `v${i}`);
      writes.push(db.put(k, `v${i}`));
    }
    if (i % 1000 === 999) await Promise.all(writes.splice(0)); // several records
  }
  await Promise.all(writes);
  await db.close();
  return model;
}

describe('the WAL records an open leaves pending', () => {
  it('are inserted by the first read, which sees every write', async () => {
    const model = await withWal(12_000);
    const db = await Engine.open(dir);
    expect(db.stats().pendingWalRecords).toBeGreaterThan(0);
    for (let i = 0; i < 5000; i++) expect(str(db.getSync(`k${i}`))).toBe(model.get(`k${i}`));
    expect(db.stats().pendingWalRecords).toBe(0);
    const seen = new Map<string, string>();
    for await (const [k, v] of db.iterator()) seen.set(str(k)!, str(v)!);
    expect(seen).toEqual(model);
    await db.close();
  });

  it('are inserted in the background soon after the open, with no read or write', async () => {
    const model = await withWal(12_000);
    const db = await Engine.open(dir);
    const before = db.stats().pendingWalRecords;
    expect(before).toBeGreaterThan(1);
    let turns = 0;
    while (db.stats().pendingWalRecords > 0) {
      await turn();
      turns++;
    }
    expect(turns).toBeGreaterThan(0); // in steps, not all in the open's turn
    expect(turns).toBeLessThan(1000);
    expect(str(db.getSync('k1'))).toBe(model.get('k1'));
    await db.close();
  });

  it('go in before a write, whose sequence follows theirs, and all survive the next open', async () => {
    const model = await withWal(5000);
    const db = await Engine.open(dir);
    expect(db.stats().pendingWalRecords).toBeGreaterThan(0);
    const last = db.stats().lastSequence;
    await db.put('k1', 'after');
    model.set('k1', 'after');
    expect(db.stats().pendingWalRecords).toBe(0);
    expect(db.stats().lastSequence).toBe(last + 1);
    await db.close();
    const again = await Engine.open(dir);
    const seen = new Map<string, string>();
    for await (const [k, v] of again.iterator()) seen.set(str(k)!, str(v)!);
    expect(seen).toEqual(model);
    await again.close();
  });

  it('make an open and close that took no write leave every file as it was, however soon the close', async () => {
    const model = await withWal(5000);
    const files = snapshot();
    for (const wait of [0, 1, 50]) {
      const db = await Engine.open(dir);
      for (let i = 0; i < wait; i++) await turn();
      await db.close();
      expect(snapshot()).toEqual(files);
    }
    const db = await Engine.open(dir);
    expect(str(db.getSync('k2'))).toBe(model.get('k2'));
    await db.close();
  });
});

describe('an open that leaves WAL records pending', () => {
  it('still fails on a malformed batch behind a good checksum, leaving every file as it was', async () => {
    await withWal(100);
    const [log] = readdirSync(dir).filter((f) => f.endsWith('.log'));
    const db = await Engine.open(dir);
    const last = db.stats().lastSequence;
    await db.close();
    // A batch that says two entries and holds one, in a record whose checksum is right.
    const bad = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 1, 0x78, 1, 0x79]);
    bad.writeUInt32LE(last + 1, 0);
    const writer = new RecordWriter(join(dir, log!), undefined, statSync(join(dir, log!)).size);
    writer.addRecord(bad, 0, bad.length);
    writer.close();
    const files = snapshot();
    await expect(Engine.open(dir)).rejects.toBeInstanceOf(CorruptionError);
    expect(snapshot()).toEqual(files);
  });
});
