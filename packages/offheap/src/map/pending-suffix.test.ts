/**
 * The writes a crash open owes its image (pending-suffix.ts): the map opened from an image plus a WAL suffix answers
 * every read and takes every write as the model does, whether the owed writes went in by key, in the background
 * or all at once, and what it holds survives a close and reopen.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { hashBytes } from '../key-bytes.js';
import { nativeStatus } from '../persist/native.js';
import { OffHeapMap } from './offheap-map.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-pending-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);

type Value = { n: number; pad: string };
const value = (n: number): Value => ({ n, pad: 'p'.repeat(n % 300) });
const KEYS = 600;
const keyOf = (i: number) => `k${i}`;

/** Two keys of the same hash (found by search: the fold goes by hash, so both must come right). */
function collidingKeys(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const k = `c${i}`;
    const b = Buffer.from(k);
    const h = hashBytes(b, 0, b.length);
    const other = seen.get(h);
    if (other !== undefined) return [other, k];
    seen.set(h, k);
  }
}
const [C1, C2] = collidingKeys();

/**
 * A directory as a crash leaves it, made without a crash: a map with an image, then `suffix` more writes (over the
 * same keys, new ones, deletes, and both colliding keys), copied by a checkpoint (image + WAL, no close image).
 * Returns the copy and the model of what it holds.
 */
async function crashedCopy(suffix: number, seed: number): Promise<{ dir: string; model: Map<string, Value> }> {
  const dir = freshDir();
  const model = new Map<string, Value>();
  const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
  for (let i = 0; i < KEYS; i++) {
    map.set(keyOf(i), value(i));
    model.set(keyOf(i), value(i));
  }
  map.set(C1, value(1));
  model.set(C1, value(1));
  await map.writeImage();
  let x = seed;
  for (let j = 0; j < suffix; j++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const k = keyOf(x % (KEYS + 200)); // a fifth of them new keys
    if (x % 7 === 0) {
      map.delete(k);
      model.delete(k);
    } else {
      map.set(k, value(j + 1000));
      model.set(k, value(j + 1000));
    }
  }
  map.set(C2, value(2));
  model.set(C2, value(2));
  map.set(C1, value(3));
  model.set(C1, value(3));
  await map.durable();
  const copy = freshDir();
  await map.checkpoint(copy);
  await map.close();
  return { dir: copy, model };
}

type Op =
  | { kind: 'get' | 'has' | 'getBytes' | 'delete'; key: string }
  | { kind: 'set'; key: string; n: number }
  | { kind: 'batch'; key: string; other: string; n: number }
  | { kind: 'turn' };

const keyArb = fc.oneof(fc.integer({ min: 0, max: KEYS + 250 }).map(keyOf), fc.constantFrom(C1, C2));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('get' as const, 'has' as const, 'getBytes' as const, 'delete' as const),
    key: keyArb,
  }),
  fc.record({ kind: fc.constant('set' as const), key: keyArb, n: fc.nat(5000) }),
  fc.record({ kind: fc.constant('batch' as const), key: keyArb, other: keyArb, n: fc.nat(5000) }),
  fc.constant({ kind: 'turn' as const }),
);

async function runOps(map: OffHeapMap<string, Value>, model: Map<string, Value>, ops: readonly Op[]): Promise<void> {
  for (const op of ops) {
    switch (op.kind) {
      case 'get':
        expect(map.get(op.key), op.key).toEqual(model.get(op.key));
        break;
      case 'has':
        expect(map.has(op.key), op.key).toBe(model.has(op.key));
        break;
      case 'getBytes':
        expect(map.getBytes(op.key) !== undefined, op.key).toBe(model.has(op.key));
        break;
      case 'delete':
        expect(map.delete(op.key), op.key).toBe(model.delete(op.key));
        break;
      case 'set':
        map.set(op.key, value(op.n));
        model.set(op.key, value(op.n));
        break;
      case 'batch':
        // A set of one key and a delete of another (or of the same, which the later op wins).
        await map.batch().set(op.key, value(op.n)).delete(op.other).write();
        model.set(op.key, value(op.n));
        model.delete(op.other);
        break;
      case 'turn':
        await new Promise((r) => setImmediate(r)); // a background step may run
        break;
    }
  }
}

function expectWhole(map: OffHeapMap<string, Value>, model: Map<string, Value>): void {
  expect(map.size).toBe(model.size);
  const entries = new Map(map.entries());
  expect(entries.size).toBe(model.size);
  for (const [k, v] of model) expect(entries.get(k), k).toEqual(v);
}

describe('an open after a crash, before its replayed writes are in memory', () => {
  it('reads and writes as the model, by key, in the background or all at once, and reopens the same', async () => {
    // Over 256 writes: the background copies the image's pages in bulk, step by step.
    const base = await crashedCopy(1500, 7);
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 120 }), fc.boolean(), async (ops, waitForAll) => {
        const dir = `${base.dir}-run${runs++}`;
        cpSync(base.dir, dir, { recursive: true });
        const model = new Map(base.model);
        const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
        expect(map.openStats.replayed).toBeGreaterThan(1000); // a delete of an absent key is not written
        expect(map.openStats.replayPending).toBe(map.openStats.replayed);
        if (waitForAll) while (map.openStats.replayPending > 0) await new Promise((r) => setImmediate(r));
        await runOps(map, model, ops);
        expectWhole(map, model);
        expect(map.openStats.replayPending).toBe(0);
        await map.close();
        const again = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
        expect(again.openStats).toMatchObject({ source: 'image', replayed: 0 });
        expectWhole(again, model);
        await again.close();
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('copies the pages its background steps write in bulk, and only those, on a mapped image', async () => {
    const { dir, model } = await crashedCopy(1500, 11);
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    while (map.openStats.replayPending > 0) await new Promise((r) => setImmediate(r));
    const { replayPages } = map.openStats;
    if (nativeStatus.imageLoader === 'mapped' && process.platform === 'linux') expect(replayPages).toBeGreaterThan(0);
    else expect(replayPages).toBe(0);
    expectWhole(map, model);
    await map.close();
  });

  it('a large batch onto a mapped image copies the pages it writes first, and the map stays the model', async () => {
    const dir = freshDir();
    const model = new Map<string, Value>();
    const first = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    for (let i = 0; i < 20_000; i++) {
      first.set(keyOf(i), value(i));
      model.set(keyOf(i), value(i));
    }
    await first.close();
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    expect(map.openStats).toMatchObject({ source: 'image', imagePagesCopied: 0 });
    const small = map.batch();
    for (let i = 0; i < 10; i++) small.set(keyOf(i), value(i + 1));
    await small.write();
    for (let i = 0; i < 10; i++) model.set(keyOf(i), value(i + 1));
    expect(map.openStats.imagePagesCopied).toBe(0); // a handful faults its pages one by one
    // Overwrites (their records' pages), new keys (the table's) and deletes, in one batch.
    const big = map.batch();
    for (let i = 0; i < 3000; i++) {
      const k = keyOf((i * 7919) % 25_000);
      if (i % 5 === 0) {
        big.delete(k);
        model.delete(k);
      } else {
        big.set(k, value(i));
        model.set(k, value(i));
      }
    }
    await big.write();
    const copied = map.openStats.imagePagesCopied;
    if (nativeStatus.imageLoader === 'mapped' && process.platform === 'linux') expect(copied).toBeGreaterThan(0);
    else expect(copied).toBe(0);
    expectWhole(map, model);
    await map.close();
    const again = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    expectWhole(again, model);
    await again.close();
  });

  it('holds every owed write before sharing its memory, and writes them into the image at close', async () => {
    const { dir, model } = await crashedCopy(300, 13);
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    const handle = map.share(); // readers read the memory itself
    expect(map.openStats.replayPending).toBe(0);
    handle.port.close();
    expectWhole(map, model);
    await map.close();
    // Closed before any read: the close puts them in first.
    const { dir: other, model: otherModel } = await crashedCopy(300, 17);
    const closedAtOnce = await OffHeapMap.open<string, Value>({ dir: other, imageEvery: false });
    await closedAtOnce.close();
    const again = await OffHeapMap.open<string, Value>({ dir: other, imageEvery: false });
    expect(again.openStats).toMatchObject({ source: 'image', replayed: 0 });
    expectWhole(again, otherModel);
    await again.close();
  });

  it('pages a range from the engine without waiting for them', async () => {
    const { dir, model } = await crashedCopy(300, 23);
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    const pending = map.openStats.replayPending;
    expect(pending).toBeGreaterThan(0);
    const page = map.range({ prefix: 'k', limit: 10_000 });
    expect(map.openStats.replayPending).toBe(pending);
    const want = [...model.keys()]
      .filter((k) => k.startsWith('k'))
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(page.entries.map(([k]) => k)).toEqual(want);
    expectWhole(map, model);
    await map.close();
  });

  it('answers for both keys of one hash', async () => {
    const { dir, model } = await crashedCopy(10, 19);
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    expect(map.get(C2)).toEqual(model.get(C2));
    expect(map.get(C1)).toEqual(model.get(C1));
    expectWhole(map, model);
    await map.close();
  });

  it('of byte keys, reads and writes as the model', async () => {
    const dir = freshDir();
    const k = (i: number) => Uint8Array.of(i & 0xff, i >> 8, 7);
    const model = new Map<number, number>();
    const map = await OffHeapMap.open<Uint8Array, number>({ dir, keys: 'bytes', imageEvery: false });
    for (let i = 0; i < 500; i++) map.set(k(i), i);
    await map.writeImage();
    for (let i = 0; i < 700; i++) {
      if (i % 9 === 0) map.delete(k(i));
      else map.set(k(i), -i);
    }
    await map.durable();
    const copy = freshDir();
    await map.checkpoint(copy);
    await map.close();
    for (let i = 0; i < 700; i++) if (i % 9 !== 0) model.set(i, -i);
    const again = await OffHeapMap.open<Uint8Array, number>({ dir: copy, keys: 'bytes', imageEvery: false });
    expect(again.openStats.replayPending).toBe(700 - 22); // 22 deletes of keys never set are not written
    for (let i = 0; i < 700; i += 3) expect(again.get(k(i))).toBe(model.get(i));
    again.delete(k(1));
    model.delete(1);
    expect(again.size).toBe(model.size);
    for (const [key, v] of again.entries()) expect(model.get(key[0]! | (key[1]! << 8))).toBe(v);
    await again.close();
  });
});
