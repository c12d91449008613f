import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../db/engine.js';
import { forEachUpdate } from './updates-since.js';

const dec = new TextDecoder();
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-updates-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const logs = (d: string) => readdirSync(d).filter((n) => n.endsWith('.log'));

/** Writes `n` numbered puts (every 7th a delete of an earlier key), flushing every `flushEvery`; returns them. */
async function writeSome(db: Engine, n: number, flushEvery: number, from = 0): Promise<string[]> {
  const done: string[] = [];
  for (let i = from; i < from + n; i++) {
    if (i % 7 === 6) {
      await db.delete(`k${i - 3}`);
      done.push(`del k${i - 3}`);
    } else {
      await db.put(`k${i}`, `v${i}`.repeat(1 + (i % 5)));
      done.push(`put k${i}=${`v${i}`.repeat(1 + (i % 5))}`);
    }
    if ((i + 1) % flushEvery === 0) await db.flush();
  }
  return done;
}

/** The writes after `after` as `updatesSince` gives them, as text, or its reason. */
async function since(db: Engine, after: number): Promise<string[] | string> {
  const r = await db.updatesSince(after);
  if (!r.ok) return r.reason;
  const out: string[] = [];
  let expected = after + 1;
  forEachUpdate(r.batches, after, (seq, key, value) => {
    expect(seq).toBe(expected++);
    out.push(value === undefined ? `del ${dec.decode(key)}` : `put ${dec.decode(key)}=${dec.decode(value)}`);
  });
  expect(out.length).toBe(r.updates);
  return out;
}

describe('updatesSince and WAL retention', () => {
  it('answers the writes after a pinned sequence across flushes, and fails once the logs are gone', async () => {
    const db = await Engine.open(dir);
    await writeSome(db, 50, 25); // flushed, and without a pin their logs went
    const pin = db.stats().lastSequence;
    db.retainWalAfter(pin);
    const after = await writeSome(db, 300, 40, 50);
    expect(db.stats().flushes).toBeGreaterThan(5);
    expect(await since(db, pin)).toEqual(after);
    // Any later sequence is answered too, from the middle of a log.
    expect(await since(db, pin + 123)).toEqual(after.slice(123));
    // The writes before the pin were in logs that went once their data was in tables.
    expect(await since(db, 0)).toMatch(/no longer in the WAL/);
    // Moving the pin lets the older logs go at once (close waits for the unlinks).
    const before = logs(dir).length;
    const later = db.stats().lastSequence - 5;
    db.retainWalAfter(later);
    await db.close();
    expect(logs(dir).length).toBeLessThan(before);
    const again = await Engine.open(dir, { retainWalAfter: later });
    expect(await since(again, later)).toEqual(after.slice(-5));
    expect(await since(again, pin)).toMatch(/no longer in the WAL/);
    again.retainWalAfter(undefined);
    await again.flush();
    await again.close();
    expect(logs(dir).length).toBe(1);
  });

  it('keeps the pinned logs across a reopen that gives the pin, and deletes them without it', async () => {
    let db = await Engine.open(dir);
    await writeSome(db, 20, 1000);
    const pin = db.stats().lastSequence;
    db.retainWalAfter(pin);
    const after = await writeSome(db, 200, 30, 20);
    await db.close();
    db = await Engine.open(dir, { retainWalAfter: pin });
    expect(await since(db, pin)).toEqual(after);
    await db.close();
    db = await Engine.open(dir);
    await db.close();
    db = await Engine.open(dir);
    expect(await since(db, pin)).toMatch(/no longer in the WAL|no log holds/);
    await db.close();
  });

  it('answers the first updatesSince after a pinned open from the batches its replay read, not the logs', async () => {
    let db = await Engine.open(dir);
    await writeSome(db, 20, 1000);
    const pin = db.stats().lastSequence;
    db.retainWalAfter(pin);
    const after = await writeSome(db, 200, 1000, 20);
    await db.close(); // a clean close: the next open replays the log into its memtable
    db = await Engine.open(dir, { retainWalAfter: pin });
    // With the logs moved away, only what the open read can answer.
    const moved = join(dir, 'moved');
    mkdirSync(moved);
    const names = logs(dir);
    for (const name of names) renameSync(join(dir, name), join(moved, name));
    expect(await since(db, pin + 5)).toEqual(after.slice(5));
    // That answer let go of them: the next one reads the logs.
    expect(await since(db, pin)).toMatch(/no log holds/);
    for (const name of names) renameSync(join(moved, name), join(dir, name));
    expect(await since(db, pin)).toEqual(after);
    await db.close();
    // A call asking for more than the replay kept (before the pin) reads the logs.
    db = await Engine.open(dir, { retainWalAfter: pin });
    for (const name of names) renameSync(join(dir, name), join(moved, name));
    expect(await since(db, pin - 1)).toMatch(/no log holds/);
    for (const name of names) renameSync(join(moved, name), join(dir, name));
    await db.close();
  });

  it('links the retained logs into a checkpoint, whose copy answers from the pin when opened with it', async () => {
    const db = await Engine.open(dir);
    await writeSome(db, 10, 1000);
    const pin = db.stats().lastSequence;
    db.retainWalAfter(pin);
    const after = await writeSome(db, 120, 25, 10);
    const copy = join(dir, '..', `${dir.split('/').pop()}-copy`);
    try {
      await db.checkpoint(copy);
      await db.put('later', 'x');
      const c = await Engine.open(copy, { retainWalAfter: pin });
      expect(await since(c, pin)).toEqual(after);
      expect(c.getSync('later')).toBeUndefined();
      await c.close();
    } finally {
      rmSync(copy, { recursive: true, force: true });
      await db.close();
    }
  });

  it('reports a damaged retained log as a reason, and a WAL-less engine as having none', async () => {
    const db = await Engine.open(dir);
    await writeSome(db, 10, 1000);
    const pin = db.stats().lastSequence;
    db.retainWalAfter(pin);
    await writeSome(db, 100, 20, 10);
    const oldest = logs(dir).sort()[0]!;
    const path = join(dir, oldest);
    const bytes = Buffer.alloc(statSync(path).size, 0x5a);
    writeFileSync(path, bytes);
    const r = await db.updatesSince(pin);
    expect(r.ok).toBe(false);
    await db.close();
    const nowal = await Engine.open(join(dir, 'nowal'), { wal: false });
    expect(await nowal.updatesSince(0)).toEqual({ ok: false, reason: 'the engine keeps no WAL (wal: false)' });
    await nowal.close();
  });

  it('keeps the newest logs within walRetentionBytes without a pin, and no more; checkpoints carry none of them', async () => {
    const budget = 3000;
    const db = await Engine.open(dir, { walRetentionBytes: budget });
    const start = db.stats().lastSequence;
    const written = await writeSome(db, 400, 20, 0); // 20 flushes: each log holds 20 writes of 30-60 bytes
    expect(db.stats().flushes).toBeGreaterThanOrEqual(20);
    await db.flush();
    const kept = logs(dir);
    // Logs whose data is in tables are kept up to the budget (plus the live one), older ones went.
    const sizes = kept.map((n) => statSync(join(dir, n)).size);
    expect(kept.length).toBeGreaterThan(2);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget + Math.max(...sizes));
    expect(await since(db, start)).toMatch(/no longer in the WAL/);
    // The kept writes are answered: from the first write of the oldest kept log on.
    const last = db.stats().lastSequence;
    const back = 30;
    expect(await since(db, last - back)).toEqual(written.slice(-back));
    const copy = `${dir}-copy`; // beside the database: a checkpoint inside its source is refused
    try {
      await db.checkpoint(copy);
      expect(logs(copy).length).toBeLessThanOrEqual(1);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
    await db.close();
    // Without the budget the next open deletes them.
    const again = await Engine.open(dir);
    await again.close();
    expect(logs(dir).length).toBe(1);
    await expect(Engine.open(join(dir, 'x'), { walRetentionBytes: -1 })).rejects.toThrow(/walRetentionBytes/);
  });

  it('reads only the logs from the one holding the sequence asked: older ones are not opened', async () => {
    const db = await Engine.open(dir, { walRetentionBytes: 1 << 20 });
    const written = await writeSome(db, 200, 20, 0);
    const kept = logs(dir).sort();
    expect(kept.length).toBeGreaterThan(5);
    // Damage the middle of the oldest kept logs: a read that opened them would report it.
    for (const name of kept.slice(0, 3)) {
      const path = join(dir, name);
      const bytes = readFileSync(path);
      bytes[bytes.length >> 1]! ^= 0xff;
      writeFileSync(path, bytes);
    }
    const last = db.stats().lastSequence;
    expect(await since(db, last - 25)).toEqual(written.slice(-25));
    // From the start, the damage is met and named.
    expect(await since(db, 0)).toMatch(/checksum|continues at/i);
    await db.close();
  });

  it('refuses a bad retainWalAfter option', async () => {
    await expect(Engine.open(dir, { retainWalAfter: -2 })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
    });
  });
});
