import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { OffHeapMap } from './offheap-map.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-keys-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `k${dirs++}`);

/** Strings of any UTF-16 code units: lone surrogates and U+FFFD (what a lone surrogate used to be stored as) often. */
const codeUnitString = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x61, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfffd)), {
    maxLength: 6,
  })
  .map((units) => String.fromCharCode(...units));

const invalid = expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT });

/**
 * Applies `[key, value]` writes to `m` and to a plain Map, the keys a map must refuse left out of the model; checks
 * each refused key is refused by every method, then that `m` holds exactly the model.
 */
function applyAndCompare(m: OffHeapMap<string, unknown>, writes: [string, number][]): Map<string, number> {
  const model = new Map<string, number>();
  for (const [k, v] of writes) {
    if (k.isWellFormed()) {
      m.set(k, v);
      model.set(k, v);
      continue;
    }
    expect(() => m.set(k, v)).toThrow(invalid);
    expect(() => m.setBytes(k, Uint8Array.of(1))).toThrow(invalid);
    expect(() => m.get(k)).toThrow(invalid);
    expect(() => m.getBytes(k)).toThrow(invalid);
    expect(() => m.has(k)).toThrow(invalid);
    expect(() => m.delete(k)).toThrow(invalid);
  }
  expectSame(m, model);
  return model;
}

function expectSame(m: OffHeapMap<string, unknown>, model: Map<string, number>): void {
  expect(m.size).toBe(model.size);
  for (const [k, v] of model) expect(m.get(k)).toBe(v);
  // Keys come back as the very strings written: nothing was replaced on the way to bytes and back.
  expect(new Set(m.keys())).toEqual(new Set(model.keys()));
}

describe('OffHeapMap string keys', () => {
  it('never lets two distinct accepted keys name one record (memory-only)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(codeUnitString, fc.nat()), { maxLength: 40 }), (writes) => {
        applyAndCompare(new OffHeapMap<string, unknown>({ threads: 1 }), writes);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps distinct accepted keys apart through the engine, by scan and by image', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(codeUnitString, fc.nat()), { maxLength: 30 }), async (writes) => {
        const dir = freshDir();
        const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
        const model = applyAndCompare(m, writes);
        await m.close();
        // the image first: an open with `image: false` closes without one, so the image is stale after it
        for (const image of [true, false]) {
          const back = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image });
          expect(back.openStats.source).toBe(image ? 'image' : 'scan');
          expectSame(back, model);
          await back.close();
        }
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 10 },
    );
  });

  it('refuses to open as a string map an engine holding a key that is not UTF-8, and changes nothing', async () => {
    const dir = freshDir();
    const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    m.set('a', 1).set('é', 2);
    await m.close();
    const engine = await Engine.open(dir);
    const foreign = Uint8Array.of(0x01, 0x61, 0xff); // namespace 1 (user keys), then 'a' and a byte no UTF-8 has
    await engine.put(foreign, Uint8Array.of(0x03), { sync: true });
    await engine.close();
    for (const image of [true, false]) {
      await expect(OffHeapMap.open({ dir, threads: 1, image })).rejects.toMatchObject({
        code: OffHeapErrorCodes.INCOMPATIBLE,
        message: expect.stringContaining('61ff'),
      });
    }
    const after = await Engine.open(dir);
    expect(Array.from(after.getSync(foreign)!)).toEqual([0x03]);
    await after.close();
  });
});
