import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { nativeStatus } from '../persist/native.js';
import { OffHeapMap } from './offheap-map.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-checkpoint-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);
const SMALL_ENGINE = { writeBufferSize: 32 * 1024, targetFileSize: 16 * 1024 };

type Value = { n: number; pad: string };
const value = (n: number): Value => ({ n, pad: 'v'.repeat(n % 700) });

/** Writes `count` sets (and every fifth a delete of an earlier key) into `map` and `model` alike. */
function writeBoth(map: OffHeapMap<string, Value>, model: Map<string, Value>, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    if (i % 5 === 4) {
      map.delete(`k${(i - 2) % 900}`); // set two writes ago: the delete reaches the engine
      model.delete(`k${(i - 2) % 900}`);
    } else {
      map.set(`k${i % 900}`, value(i));
      model.set(`k${i % 900}`, value(i));
    }
  }
}

function expectEqual(map: OffHeapMap<string, Value>, model: Map<string, Value>): void {
  expect(map.size).toBe(model.size);
  for (const [k, v] of model) expect(map.get(k)).toEqual(v);
}

describe('periodic map images', () => {
  it('are written by bytes, tag the engine, pin the WAL after them, and an open replays only what followed', async () => {
    const dir = freshDir();
    const model = new Map<string, Value>();
    const map = await OffHeapMap.open<string, Value>({
      dir,
      imageEvery: { bytes: 40 * 1024, seconds: 0 },
      engine: SMALL_ENGINE,
    });
    for (let c = 0; c < 30; c++) {
      writeBoth(map, model, c * 100, 100);
      await map.durable();
      await new Promise((r) => setImmediate(r));
    }
    // The trigger runs after the write that crossed it; an image's fsyncs and rename complete on later turns.
    while (map.imageStats()!.written < 3) await new Promise((r) => setTimeout(r, 5));
    expect(map.engineStats()!.flushes).toBeGreaterThan(3);
    await map.writeImage();
    writeBoth(map, model, 3000, 40);
    await map.durable();
    // What a crash leaves: the image above and the WAL after it. A checkpoint copies exactly that (no close image).
    const copy = freshDir();
    const cp = await map.checkpoint(copy);
    expect(cp.imageSequence).toBeGreaterThan(0);
    await map.close();
    const again = await OffHeapMap.open<string, Value>({ dir: copy, engine: SMALL_ENGINE });
    expect(again.openStats).toEqual({
      source: 'image',
      replayed: 40,
      replayPending: 40,
      replayPages: 0,
      imagePagesCopied: 0,
      imageCheck: 'open',
      imageRejected: null,
    });
    expectEqual(again, model);
    await again.close();
  });

  it('fall back to a scan, with the reason, when the WAL after the image is gone', async () => {
    const dir = freshDir();
    const model = new Map<string, Value>();
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false, engine: SMALL_ENGINE });
    writeBoth(map, model, 0, 500);
    await map.close(); // the image of the close
    // Opened without images, nothing pins the WAL after that image: its logs go as they are flushed.
    const plain = await OffHeapMap.open<string, Value>({ dir, image: false, engine: SMALL_ENGINE });
    writeBoth(plain, model, 500, 2000);
    await plain.close();
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push(String(w.code));
    process.on('warning', onWarning);
    try {
      const again = await OffHeapMap.open<string, Value>({ dir, engine: SMALL_ENGINE });
      expect(again.openStats.source).toBe('scan');
      expect(again.openStats.imageRejected).toMatch(/no longer in the WAL|no log holds/);
      expectEqual(again, model);
      await again.close();
      await new Promise((r) => setImmediate(r));
      expect(warnings).toContain('HEAPLESS_WARN_OFFHEAP_IMAGE_REPLAY_UNAVAILABLE');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('refuse a bad imageEvery option', async () => {
    await expect(OffHeapMap.open({ dir: freshDir(), imageEvery: { bytes: -1 } })).rejects.toMatchObject({
      code: OffHeapErrorCodes.INVALID_ARGUMENT,
    });
  });
});

describe('map.checkpoint', () => {
  it('copies a live map while writes go on; the copy opens from its image with no scan and equals the model', async () => {
    const dir = freshDir();
    const model = new Map<string, Value>();
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false, engine: SMALL_ENGINE });
    writeBoth(map, model, 0, 4000);
    await map.writeImage();
    writeBoth(map, model, 4000, 300);
    // A writer keeps going while the checkpoint runs; what it wrote before the call is in the copy, what it wrote
    // after may be: the copy is the model after some write from the call on.
    const log: [string, Value | undefined][] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 10_000; !stop; i++) {
        const k = `w${i % 50}`;
        map.set(k, value(i));
        log.push([k, value(i)]);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await new Promise((r) => setImmediate(r));
    const before = log.length;
    for (const [k, v] of log) model.set(k, v!);
    const copy = freshDir();
    const cp = await map.checkpoint(copy);
    stop = true;
    await writer;
    expect(cp.dir).toBe(copy);
    expect(cp.engineMs).toBeLessThanOrEqual(cp.ms);
    const again = await OffHeapMap.open<string, Value>({ dir: copy, engine: SMALL_ENGINE });
    try {
      expect(again.openStats.source).toBe('image');
      expect(again.openStats.replayed).toBeGreaterThanOrEqual(300);
      // Over 256 writes to replay: a mapped image is populated, not read again (map-replay.ts).
      expect(again.stats().imageLoader).toBe(nativeStatus.imageLoader);
      let applied = before;
      const matches = () => {
        if (again.size !== model.size) return false;
        for (const [k, v] of model) if (again.get(k)?.n !== v.n) return false;
        return true;
      };
      while (!matches() && applied < log.length) {
        const [k, v] = log[applied++]!;
        model.set(k, v!);
      }
      expectEqual(again, model);
    } finally {
      await again.close();
    }
    // The source went on and is whole.
    for (const [k, v] of log) model.set(k, v!);
    expectEqual(map, model);
    await map.close();
  });

  it('refuses a directory inside the map, an existing non-empty one, and a memory-only map', async () => {
    const dir = freshDir();
    const map = await OffHeapMap.open<string, Value>({ dir });
    map.set('a', value(1));
    await expect(map.checkpoint(join(dir, 'inside'))).rejects.toMatchObject({
      code: OffHeapErrorCodes.INVALID_ARGUMENT,
    });
    await expect(map.checkpoint(dir)).rejects.toMatchObject({ code: OffHeapErrorCodes.INVALID_ARGUMENT });
    // Through a symbolic link to the map's directory: inside it all the same.
    const link = freshDir();
    symlinkSync(dir, link);
    await expect(map.checkpoint(join(link, 'inside'))).rejects.toMatchObject({
      code: OffHeapErrorCodes.INVALID_ARGUMENT,
    });
    const full = freshDir();
    mkdirSync(full);
    writeFileSync(join(full, 'x'), 'x');
    await expect(map.checkpoint(full)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' });
    expect(readdirSync(full)).toEqual(['x']);
    expect(existsSync(join(dir, 'inside'))).toBe(false);
    await map.close();
    await expect(new OffHeapMap().checkpoint(freshDir())).rejects.toMatchObject({
      code: OffHeapErrorCodes.INVALID_ARGUMENT,
    });
  });
});
