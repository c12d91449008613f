import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes, OffHeapMap, struct } from '../index.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-counters-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `c${dirs++}`);

const code = (c: string) => expect.objectContaining({ code: c });
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const INT64_MAX = 2n ** 63n - 1n;

describe('incr', () => {
  it('counts from an absent key, keeps numbers numbers, returns the version of its write', async () => {
    const map = await OffHeapMap.open<string, unknown>({ dir: freshDir() });
    try {
      expect(map.incr('n')).toEqual({ value: 1, version: map.engineStats()!.lastSequence });
      expect(map.incr('n', 41).value).toBe(42);
      expect(map.incr('n', -50).value).toBe(-8);
      expect(map.get('n')).toBe(-8);
      map.set('big', 2 ** 40);
      expect(map.incr('big', 1).value).toBe(2 ** 40 + 1);
      expect(map.get('big')).toBe(2 ** 40 + 1);
    } finally {
      await map.close();
    }
  });

  it('goes past 2^53 as a bigint, which get reads too, and back to a number', () => {
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    map.set('n', MAX_SAFE);
    expect(map.incr('n').value).toBe(BigInt(MAX_SAFE) + 1n);
    expect(map.get('n')).toBe(BigInt(MAX_SAFE) + 1n);
    expect(map.incr('n', -2).value).toBe(MAX_SAFE - 1);
    expect(map.get('n')).toBe(MAX_SAFE - 1);
    expect(map.incr('m', INT64_MAX).value).toBe(INT64_MAX);
  });

  it('refuses a value that is no integer and an overflow, writing nothing', () => {
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    for (const v of ['1', 1.5, { n: 1 }, null, true, 2 ** 64]) {
      map.set('x', v);
      const { version } = map.getEntry('x')!;
      expect(() => map.incr('x')).toThrow(code(OffHeapErrorCodes.NOT_AN_INTEGER));
      expect(map.getEntry('x')).toEqual({ value: v, version, expiresAt: 0 });
    }
    map.set('top', INT64_MAX);
    expect(() => map.incr('top')).toThrow(code(OffHeapErrorCodes.COUNTER_OVERFLOW));
    expect(map.get('top')).toBe(INT64_MAX);
    map.set('bottom', -(2n ** 63n));
    expect(() => map.incr('bottom', -1)).toThrow(code(OffHeapErrorCodes.COUNTER_OVERFLOW));
    for (const d of [1.5, '1', 2n ** 63n, Number.NaN]) {
      expect(() => map.incr('n', d as never)).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    }
    const s = new OffHeapMap({ struct: struct({ n: 'u32' }), threads: 1 });
    expect(() => s.incr('n')).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
  });

  it('matches bigint arithmetic over random deltas, across a reopen', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b'), fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n })), {
          maxLength: 30,
        }),
        async (steps) => {
          const dir = freshDir();
          let map = await OffHeapMap.open<string, unknown>({ dir, image: false });
          const model = new Map<string, bigint>();
          try {
            for (const [i, [k, d]] of steps.entries()) {
              const delta = i % 2 === 0 && d >= -BigInt(MAX_SAFE) && d <= BigInt(MAX_SAFE) ? Number(d) : d;
              const want = (model.get(k) ?? 0n) + d;
              if (want > INT64_MAX || want < -(2n ** 63n)) {
                expect(() => map.incr(k, delta)).toThrow(code(OffHeapErrorCodes.COUNTER_OVERFLOW));
                continue;
              }
              model.set(k, want);
              const { value } = map.incr(k, delta);
              expect(BigInt(value)).toBe(want);
              expect(typeof value).toBe(want >= -BigInt(MAX_SAFE) && want <= BigInt(MAX_SAFE) ? 'number' : 'bigint');
            }
            await map.close();
            map = await OffHeapMap.open<string, unknown>({ dir });
            for (const [k, v] of model) expect(BigInt(map.get(k) as number | bigint)).toBe(v);
          } finally {
            await map.close();
          }
        },
      ),
      { numRuns: 15 },
    );
  }, 60_000);
});
