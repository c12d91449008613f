import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import { pack, unpack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { NO_EXPIRY } from '../memory/arena.js';
import {
  directoryFromImage,
  EnginePersistence,
  FORMAT_VERSION,
  type MapMeta,
  META_KEY,
  NS_DATA,
  packImageMeta,
  prepareDirectory,
  STRUCTURES_KEY,
} from './persistence.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-persistence-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `p${dirs++}`);

/** The engine keys of FORMAT.md §7, written out here independently of persistence.ts. */
const metaKey = (name: string) => Buffer.from(`\0${name}`, 'latin1');
const dataKey = (key: string) => Buffer.concat([Uint8Array.of(NS_DATA), Buffer.from(key)]);
/** A stored value of FORMAT.md §7 without an expiry: the marker, flags 0, the version (f64 LE), the value bytes. */
const stored = (version: number, ...value: number[]) => {
  const b = Buffer.alloc(10 + value.length);
  b[0] = 0xc1;
  b.writeDoubleLE(version, 2);
  b.set(value, 10);
  return new Uint8Array(b);
};
const META: MapMeta = { format: FORMAT_VERSION, keys: 'string', codec: 'msgpack', struct: null };

describe('EnginePersistence', () => {
  it('writes each put and delete under the data namespace, and a grown structure table in the same batch', async () => {
    const engine = await Engine.open(freshDir());
    const p = new EnginePersistence(engine, false, null, null);
    p.put(Buffer.from('a'), Uint8Array.of(1), 1, NO_EXPIRY, null);
    p.put(Buffer.from('x'.repeat(3000)), Uint8Array.of(2), 1, NO_EXPIRY, null); // longer than the key scratch at first
    const before = engine.stats().lastSequence;
    p.put(Buffer.from('b'), Uint8Array.of(3), 1, NO_EXPIRY, [['id', 'name']]);
    expect(engine.stats().lastSequence).toBe(before + 2); // one batch of two writes
    p.del(Buffer.from('a'));
    await p.durable();
    expect(engine.getSync(dataKey('a'))).toBeUndefined();
    expect(engine.getSync(dataKey('x'.repeat(3000)))).toEqual(stored(1, 2));
    expect(engine.getSync(dataKey('b'))).toEqual(stored(1, 3));
    expect(unpack(engine.getSync(STRUCTURES_KEY)!)).toEqual([['id', 'name']]);
    await p.flush();
    expect(engine.getSync(metaKey('sync'))).toEqual(new Uint8Array(0));
    await p.settle();
    expect(await p.tag(2)).toBeNull(); // no image kept
    await p.close();
  });

  it('copies the key and value before a put returns (the map passes views of memory it reuses)', async () => {
    const engine = await Engine.open(freshDir());
    const p = new EnginePersistence(engine, false, null, null);
    const key = Buffer.from('k1');
    const value = Uint8Array.of(7, 7);
    p.put(key, value, 1, NO_EXPIRY, null);
    key[1] = 0x32;
    value.fill(9);
    p.put(key, value, 1, NO_EXPIRY, null);
    await p.durable();
    expect(engine.getSync(dataKey('k1'))).toEqual(stored(1, 7, 7));
    expect(engine.getSync(dataKey('k2'))).toEqual(stored(1, 9, 9));
    await p.settle();
    await p.close();
  });

  it('after a failed write reports PERSIST_FAILED with the engine error as cause, and tags nothing', async () => {
    const engine = await Engine.open(freshDir());
    const p = new EnginePersistence(engine, false, { dir: engine.location, meta: META, loadedSequence: -1 }, null);
    p.put(Buffer.from('a'), Uint8Array.of(1), 1, NO_EXPIRY, null);
    await p.durable();
    await engine.close(); // every later engine write rejects with CLOSED
    p.put(Buffer.from('b'), Uint8Array.of(2), 1, NO_EXPIRY, null);
    const failed = expect.objectContaining({
      code: OffHeapErrorCodes.PERSIST_FAILED,
      cause: expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' }),
    });
    await expect(p.durable()).rejects.toEqual(failed);
    await expect(p.flush()).rejects.toEqual(failed);
    expect(p.failure).toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' });
    await p.settle();
    expect(await p.tag(1)).toBeNull();
    await p.close();
  });

  it('tags the engine state for an image: a fresh id in the engine, its last sequence, and the entry count', async () => {
    const dir = freshDir();
    const engine = await Engine.open(dir);
    await prepareDirectory(engine, META);
    const p = new EnginePersistence(engine, false, { dir, meta: META, loadedSequence: -1 }, null);
    for (let i = 0; i < 100; i++) p.put(Buffer.from(`k${i}`), Uint8Array.of(i), 1, NO_EXPIRY, null);
    await p.settle();
    const tag = await p.tag(100);
    expect(tag).not.toBeNull();
    expect(tag!.dir).toBe(dir);
    expect(tag!.meta).toEqual(META);
    expect(tag!.id.length).toBe(16);
    expect(Buffer.from(engine.getSync(metaKey('image'))!)).toEqual(Buffer.from(tag!.id));
    expect(tag!.sequence).toBe(engine.stats().lastSequence);
    expect(engine.stats().flushes).toBeGreaterThan(0); // the memtable went into a table first
    expect(new DataView(engine.getSync(metaKey('count'))!.buffer).getUint32(0, true)).toBe(100);
    // Exactly what an open then accepts as the image of this state.
    const image = { id: tag!.id, sequence: tag!.sequence, meta: packImageMeta(META, [['a']]) };
    expect(directoryFromImage(engine, META, image)).toEqual({ structures: [['a']], countHint: 0 });
    await p.close();
    const again = await Engine.open(dir);
    expect(await prepareDirectory(again, META)).toEqual({ structures: [], countHint: 100 });
    await again.close();
  });

  it('keeps the image of a map unchanged since it was loaded from it: writes nothing at all', async () => {
    const engine = await Engine.open(freshDir());
    await engine.put(Buffer.from('z'), Uint8Array.of(0));
    const sequence = engine.stats().lastSequence;
    const p = new EnginePersistence(
      engine,
      false,
      { dir: engine.location, meta: META, loadedSequence: sequence },
      null,
    );
    await p.settle();
    expect(await p.tag(5)).toBeNull();
    expect(engine.stats().lastSequence).toBe(sequence);
    expect(engine.getSync(metaKey('count'))).toBeUndefined();
    await p.close();
  });

  it('without an image records the count and no image id', async () => {
    const engine = await Engine.open(freshDir());
    const p = new EnginePersistence(engine, false, null, null);
    p.put(Buffer.from('a'), Uint8Array.of(1), 1, NO_EXPIRY, null);
    await p.settle();
    expect(await p.tag(1)).toBeNull();
    expect(engine.getSync(metaKey('count'))).toEqual(Uint8Array.of(1, 0, 0, 0));
    expect(engine.getSync(metaKey('image'))).toBeUndefined();
    await p.close();
  });
});

describe('the directory', () => {
  it('is marked with the map meta when new, and refuses another kind of map (INCOMPATIBLE, naming it)', async () => {
    const dir = freshDir();
    const engine = await Engine.open(dir);
    expect(await prepareDirectory(engine, META)).toEqual({ structures: [], countHint: 0 });
    expect(unpack(engine.getSync(META_KEY)!)).toEqual(META);
    expect(await prepareDirectory(engine, META)).toEqual({ structures: [], countHint: 0 });
    for (const other of [
      { ...META, keys: 'bytes' as const },
      { ...META, codec: 'struct' as const, struct: 'a:u8' },
      { ...META, format: FORMAT_VERSION + 1 },
    ]) {
      await expect(prepareDirectory(engine, other)).rejects.toThrow(
        expect.objectContaining({ code: OffHeapErrorCodes.INCOMPATIBLE, message: expect.stringContaining(dir) }),
      );
    }
    await engine.close();
  });

  it('takes an image only of its current state, and says why not otherwise', async () => {
    const engine = await Engine.open(freshDir());
    await prepareDirectory(engine, META);
    const id = Uint8Array.from({ length: 16 }, (_, i) => i);
    const meta = packImageMeta(META, []);
    const before = engine.stats().lastSequence;
    expect(directoryFromImage(engine, META, { id, sequence: before, meta })).toBe('image id differs from the engine');
    await engine.put(metaKey('image'), id);
    const sequence = engine.stats().lastSequence;
    expect(directoryFromImage(engine, META, { id, sequence: sequence - 1, meta })).toBe(
      `image is of sequence ${sequence - 1}, the engine is at ${sequence}`,
    );
    expect(directoryFromImage(engine, META, { id, sequence, meta: Uint8Array.of(0xc1) })).toBe(
      'image metadata is not a map meta',
    );
    expect(directoryFromImage(engine, META, { id, sequence, meta: Uint8Array.of(0x92, 0x01) })).toBe(
      'image metadata does not decode',
    );
    expect(() =>
      directoryFromImage(engine, META, {
        id,
        sequence,
        meta: pack({ meta: { ...META, keys: 'bytes' }, structures: [] }),
      }),
    ).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.INCOMPATIBLE }));
    expect(directoryFromImage(engine, META, { id, sequence, meta })).toEqual({ structures: [], countHint: 0 });
    await engine.close();
  });
});

describe('EnginePersistence.entriesInRange', () => {
  it('visits the range in key order, keys and value bytes, skips expired keys, and stops when the visitor says so', async () => {
    const engine = await Engine.open(freshDir());
    const persistence = new EnginePersistence(engine, false, null, null);
    const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    // k10 expires at 1000, k11 at 2000: both visible at 999, k10 gone at 1000.
    for (const [i, k] of keys.entries()) {
      persistence.put(Buffer.from(k), Uint8Array.of(i), i + 1, i === 10 ? 1000 : i === 11 ? 2000 : NO_EXPIRY, null);
    }
    await engine.put(Uint8Array.of(NS_DATA + 1, 0x61), Uint8Array.of(2)); // after the data namespace
    const read = (lower: string, upper: string | null, now: number, stopAfter = Number.POSITIVE_INFINITY) => {
      const seen: [string, number[]][] = [];
      persistence.entriesInRange(
        Buffer.from(lower),
        upper === null ? null : Buffer.from(upper),
        now,
        (b, o, n, vo, v) => {
          seen.push([Buffer.from(b.subarray(o, o + n)).toString(), Array.from(b.subarray(vo, vo + v))]);
          return seen.length < stopAfter;
        },
      );
      return seen;
    };
    expect(read('k05', 'k45', 999)).toEqual(keys.slice(5, 45).map((k, i) => [k, [i + 5]]));
    expect(read('k05', 'k45', 1000).map(([k]) => k)).toEqual(keys.slice(5, 45).filter((k) => k !== 'k10'));
    expect(read('k09', 'k45', 5000, 2).map(([k]) => k)).toEqual(['k09', 'k12']);
    expect(read('k05', null, 0, 3).map(([k]) => k)).toEqual(['k05', 'k06', 'k07']);
    expect(read('k48', null, 0).map(([k]) => k)).toEqual(['k48', 'k49']);
    await persistence.settle();
    await persistence.close();
  });
});
