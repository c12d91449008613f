import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { array, OffHeapErrorCodes, OffHeapMap, struct, utf8 } from '../index.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-model-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `m${dirs++}`);

type Op =
  | { t: 'set'; k: string; v: unknown }
  | { t: 'del'; k: string }
  | { t: 'get'; k: string }
  | { t: 'reopen'; image: boolean }
  | { t: 'bulk'; n: number; tag: number };

// Values of several shapes, so msgpackr structures grow between reopens and must be read back from disk.
const value = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 30 }),
  fc.record({ id: fc.integer(), name: fc.string({ maxLength: 12 }) }),
  fc.record({ id: fc.integer(), tags: fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }), ok: fc.boolean() }),
  // -0 is stored as 0 (msgpack has no negative zero; README), which offheap-map.test.ts checks on its own.
  fc.record({ x: fc.double({ noNaN: true }).map((d) => (d === 0 ? 0 : d)), y: fc.constantFrom(null, 'a', 'bb') }),
);
const key = fc.oneof(
  fc.integer({ min: 0, max: 120 }).map((i) => `k${i}`),
  fc.string({ maxLength: 5, unit: 'grapheme' }),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('set' as const), k: key, v: value }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), k: key }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('get' as const), k: key }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reopen' as const), image: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('bulk' as const), n: fc.integer({ min: 1, max: 400 }), tag: fc.nat(9) }),
  },
);

describe('OffHeapMap against a Map, through growth, deletes, reclamation and reopen', () => {
  it('matches the model after every operation and every reopen', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 80 }), async (ops) => {
        const dir = freshDir();
        let map = await OffHeapMap.open<string, unknown>({ dir });
        // whether the open map writes an image at close (then the next open with images loads it, not a scan)
        let imaging = true;
        const model = new Map<string, unknown>();
        try {
          for (const o of ops) {
            if (o.t === 'set') {
              map.set(o.k, o.v);
              model.set(o.k, o.v);
            } else if (o.t === 'del') {
              expect(map.delete(o.k)).toBe(model.delete(o.k));
            } else if (o.t === 'get') {
              expect(map.get(o.k)).toEqual(model.get(o.k));
            } else if (o.t === 'bulk') {
              // many keys at once: growth of the index, new segments, then half deleted (tombstones, free lists)
              for (let i = 0; i < o.n; i++) {
                const v = { id: i, tag: o.tag, pad: 'p'.repeat(i % 50) };
                map.set(`bulk${o.tag}:${i}`, v);
                model.set(`bulk${o.tag}:${i}`, v);
              }
              for (let i = 0; i < o.n; i += 2) {
                map.delete(`bulk${o.tag}:${i}`);
                model.delete(`bulk${o.tag}:${i}`);
              }
            } else {
              await map.close();
              map = await OffHeapMap.open<string, unknown>({ dir, image: o.image });
              expect(map.stats().loadedFrom).toBe(o.image && imaging ? 'image' : 'scan');
              imaging = o.image;
            }
            expect(map.size).toBe(model.size);
          }
          expect(new Map(map.entries())).toEqual(model);
          await map.close();
          map = await OffHeapMap.open<string, unknown>({ dir });
          expect(map.stats().loadedFrom).toBe(imaging ? 'image' : 'scan');
          expect(new Map(map.entries())).toEqual(model);
        } finally {
          await map.close();
        }
      }),
      { numRuns: 25 },
    );
  });

  it('persists struct values and in-place view writes, and refuses a different layout', async () => {
    const User = struct({ id: 'u32', name: utf8(16), score: 'f64', friends: array('u32', 3), big: 'i64' });
    const dir = freshDir();
    const map = await OffHeapMap.open<string, unknown, typeof User.fields>({ dir, struct: User });
    map.set('a', { id: 1, name: 'ann', score: 1.5, friends: [2, 3], big: -5n });
    map.set('b', { id: 2, name: 'bob', score: -0, friends: [1, 1, 1], big: 2n ** 62n });
    const v = map.view();
    expect(map.locate('a', v)).toBe(true);
    v.score = 99.25;
    v.friends.set(2, 77);
    v.name = 'anna-maria-12345';
    await map.durable();
    await map.close();
    const again = await OffHeapMap.open<string, unknown, typeof User.fields>({ dir, struct: User });
    expect(again.get('a')).toEqual({ id: 1, name: 'anna-maria-12345', score: 99.25, friends: [2, 3, 77], big: -5n });
    expect(again.get('b')).toEqual({ id: 2, name: 'bob', score: -0, friends: [1, 1, 1], big: 2n ** 62n });
    await again.close();
    const Other = struct({ id: 'u32', name: utf8(17) });
    await expect(OffHeapMap.open({ dir, struct: Other })).rejects.toMatchObject({
      code: OffHeapErrorCodes.INCOMPATIBLE,
    });
    await expect(OffHeapMap.open({ dir })).rejects.toMatchObject({ code: OffHeapErrorCodes.INCOMPATIBLE });
    // the refused opens released the directory
    const third = await OffHeapMap.open({ dir, struct: User });
    expect(third.size).toBe(2);
    await third.close();
  });

  it('persists byte keys and raw bytes, and awaits durability with flush()', async () => {
    const dir = freshDir();
    const map = await OffHeapMap.open<Uint8Array, unknown>({ dir, keys: 'bytes', sync: true });
    map.setBytes(Uint8Array.of(0), Uint8Array.of(0xc3));
    map.set(Uint8Array.of(0xff, 0), { z: 1 });
    await map.flush();
    await map.close();
    const again = await OffHeapMap.open<Uint8Array, unknown>({ dir, keys: 'bytes' });
    expect(again.get(Uint8Array.of(0))).toBe(true);
    expect(again.get(Uint8Array.of(0xff, 0))).toEqual({ z: 1 });
    expect(again.size).toBe(2);
    await again.close();
  });
});
