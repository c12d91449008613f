import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import fc from 'fast-check';
import { pack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes, OffHeapMap, VersionMismatchError } from '../index.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-versions-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `v${dirs++}`);

const mismatch = (current: number | null) =>
  expect.objectContaining({ code: OffHeapErrorCodes.VERSION_MISMATCH, current });

describe('versions and checks', () => {
  it('a persisted write’s version is the engine sequence of its write; checks that fail write nothing', async () => {
    const map = await OffHeapMap.open<string, unknown>({ dir: freshDir() });
    try {
      const v1 = map.setEntry('a', 1);
      expect(v1).toBe(map.engineStats()!.lastSequence);
      expect(map.getEntry('a')).toEqual({ value: 1, version: v1, expiresAt: 0 });
      // A value with a new msgpackr structure: the structure table goes first in the same engine batch.
      const v2 = map.setEntry('b', { id: 1, name: 'x' });
      expect(v2).toBe(map.engineStats()!.lastSequence);
      expect(map.getEntry('b')!.version).toBe(v2);

      const before = map.engineStats()!.lastSequence;
      expect(() => map.set('a', 2, { ifVersion: v1 + 100 })).toThrow(mismatch(v1));
      expect(() => map.set('a', 2, { ifAbsent: true })).toThrow(mismatch(v1));
      expect(() => map.set('zz', 2, { ifVersion: v1 })).toThrow(mismatch(null));
      expect(() => map.delete('a', { ifVersion: v1 - 1 })).toThrow(mismatch(v1));
      expect(map.engineStats()!.lastSequence).toBe(before);
      expect(map.get('a')).toBe(1);
      expect(map.has('zz')).toBe(false);

      const v3 = map.setEntry('a', 3, { ifVersion: v1 });
      expect(v3).toBeGreaterThan(v2);
      expect(map.getEntry('a')).toEqual({ value: 3, version: v3, expiresAt: 0 });
      expect(map.setEntry('c', 'new', { ifAbsent: true })).toBe(map.engineStats()!.lastSequence);
      expect(map.delete('a', { ifVersion: v3 })).toBe(true);
      expect(map.getEntry('a')).toBeUndefined();
      try {
        map.set('c', 0, { ifVersion: 0 });
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(VersionMismatchError);
        expect((e as VersionMismatchError).key).toBe('c');
      }
      for (const bad of [{ ifVersion: -1 }, { ifVersion: 1.5 }, { ifVersion: '1' }, { ifVersion: 1, ifAbsent: true }]) {
        expect(() => map.set('a', 1, bad as never)).toThrow(
          expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
        );
      }
    } finally {
      await map.close();
    }
  });

  it('a memory-only map counts its own versions, one per write', () => {
    const map = new OffHeapMap<string, number>({ threads: 1 });
    expect(map.setEntry('a', 1)).toBe(1);
    expect(map.setEntry('b', 1)).toBe(2);
    map.delete('b');
    expect(map.setEntry('a', 2, { ifVersion: 1 })).toBe(4);
    expect(map.getEntry('a')).toEqual({ value: 2, version: 4, expiresAt: 0 });
  });

  it('a batch with checks is written whole or not at all; its sets take consecutive versions', async () => {
    const map = await OffHeapMap.open<string, unknown>({ dir: freshDir() });
    try {
      const va = map.setEntry('a', 1);
      const before = map.engineStats()!.lastSequence;
      const failing = map.batch().check({ key: 'a', version: va }).check({ key: 'b', version: 1 }).set('a', 2);
      await expect(failing.write()).rejects.toEqual(mismatch(null));
      expect(failing.length).toBe(1); // left as it was
      expect(map.get('a')).toBe(1);
      expect(map.engineStats()!.lastSequence).toBe(before);

      const b = map.batch().check({ key: 'a', version: va }).check({ key: 'b', absent: true });
      b.set('a', 2).delete('x').set('b', 3);
      const { sequence } = await b.write();
      expect(map.getEntry('b')!.version).toBe(sequence);
      expect(map.getEntry('a')!.version).toBe(sequence! - 2);
      expect(map.get('a')).toBe(2);
      expect(() => map.batch().check({ key: 'a' } as never)).toThrow(
        expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
      );
      expect(() => map.batch().check({ key: 'a', version: 1, absent: true } as never)).toThrow(
        expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
      );
    } finally {
      await map.close();
    }
  });

  it('opens a format-1 directory: its values read with version 0, its meta upgraded, old and new values mixed', async () => {
    const dir = freshDir();
    const engine = await Engine.open(dir);
    const dataKey = (k: string) => Buffer.concat([Uint8Array.of(1), Buffer.from(k)]);
    await engine.put(
      Buffer.from('\0meta', 'latin1'),
      pack({ format: 1, keys: 'string', codec: 'msgpack', struct: null }),
    );
    await engine.put(dataKey('old'), pack(41));
    await engine.put(dataKey('kept'), pack('v1'));
    await engine.close();
    let map = await OffHeapMap.open<string, unknown>({ dir, image: false });
    expect(map.getEntry('old')).toEqual({ value: 41, version: 0, expiresAt: 0 });
    const v = map.setEntry('old', { n: 2 }, { ifVersion: 0 });
    await map.close();
    map = await OffHeapMap.open<string, unknown>({ dir });
    expect(map.getEntry('old')).toEqual({ value: { n: 2 }, version: v, expiresAt: 0 });
    expect(map.getEntry('kept')).toEqual({ value: 'v1', version: 0, expiresAt: 0 });
    await map.close();
    const again = await Engine.open(dir);
    const { readMapMeta } = await import('../index.js');
    expect(readMapMeta(again)!.format).toBe(2);
    await again.close();
  });
});

type Op =
  | { t: 'set'; k: string; v: number; check: 'none' | 'current' | 'stale' | 'absent' }
  | { t: 'del'; k: string; check: 'none' | 'current' | 'stale' }
  | { t: 'batch'; writes: { k: string; v: number | null }[]; checks: { k: string; stale: boolean }[] }
  | { t: 'reopen'; image: boolean };

const key = fc.integer({ min: 0, max: 12 }).map((i) => `k${i}`);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('set' as const),
      k: key,
      v: fc.integer(),
      check: fc.constantFrom('none' as const, 'current' as const, 'stale' as const, 'absent' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('del' as const),
      k: key,
      check: fc.constantFrom('none' as const, 'current' as const, 'stale' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      writes: fc.array(fc.record({ k: key, v: fc.option(fc.integer(), { nil: null }) }), { maxLength: 4 }),
      checks: fc.array(fc.record({ k: key, stale: fc.boolean() }), { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reopen' as const), image: fc.boolean() }) },
);

describe('versions against a model', () => {
  it('checks pass exactly when the model says so, versions grow per key and survive reopen by image and scan', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const dir = freshDir();
        let map = await OffHeapMap.open<string, number>({ dir });
        let imaging = true;
        const model = new Map<string, { value: number; version: number }>();
        /** The check of an op: the version to expect, or -1 for absent; `undefined` for none. */
        const expected = (k: string, check: string): number | 'absent' | undefined => {
          const cur = model.get(k);
          if (check === 'none') return undefined;
          if (check === 'absent') return 'absent';
          if (check === 'stale') return (cur?.version ?? 0) + 1_000_000;
          return cur === undefined ? 'absent' : cur.version;
        };
        const passes = (k: string, want: number | 'absent' | undefined): boolean => {
          const cur = model.get(k);
          if (want === undefined) return true;
          return want === 'absent' ? cur === undefined : cur?.version === want;
        };
        try {
          for (const o of ops) {
            if (o.t === 'set') {
              const want = expected(o.k, o.check);
              const options =
                want === undefined ? undefined : want === 'absent' ? { ifAbsent: true } : { ifVersion: want };
              if (passes(o.k, want)) {
                const before = model.get(o.k)?.version ?? -1;
                const version = map.setEntry(o.k, o.v, options);
                expect(version).toBeGreaterThan(before);
                model.set(o.k, { value: o.v, version });
              } else {
                expect(() => map.set(o.k, o.v, options)).toThrow(mismatch(model.get(o.k)?.version ?? null));
              }
            } else if (o.t === 'del') {
              const want = expected(o.k, o.check);
              const options = want === undefined || want === 'absent' ? undefined : { ifVersion: want };
              if (options === undefined || passes(o.k, want)) {
                expect(map.delete(o.k, options)).toBe(model.delete(o.k));
              } else {
                expect(() => map.delete(o.k, options)).toThrow(mismatch(model.get(o.k)?.version ?? null));
              }
            } else if (o.t === 'batch') {
              const b = map.batch();
              let ok = true;
              for (const c of o.checks) {
                const cur = model.get(c.k);
                if (c.stale) {
                  b.check({ key: c.k, version: (cur?.version ?? 0) + 1_000_000 });
                  ok = false;
                } else if (cur === undefined) b.check({ key: c.k, absent: true });
                else b.check({ key: c.k, version: cur.version });
              }
              for (const w of o.writes) {
                if (w.v === null) b.delete(w.k);
                else b.set(w.k, w.v);
              }
              if (!ok) {
                await expect(b.write()).rejects.toMatchObject({ code: OffHeapErrorCodes.VERSION_MISMATCH });
              } else {
                const { sequence } = await b.write();
                o.writes.forEach((w, i) => {
                  if (w.v === null) model.delete(w.k);
                  else model.set(w.k, { value: w.v, version: sequence! - (o.writes.length - 1 - i) });
                });
              }
            } else {
              await map.close();
              map = await OffHeapMap.open<string, number>({ dir, image: o.image });
              if (o.image && imaging) expect(map.openStats.source).toBe('image');
              imaging = o.image;
            }
            for (const [k, e] of model)
              expect(map.getEntry(k)).toEqual({ value: e.value, version: e.version, expiresAt: 0 });
            expect(map.size).toBe(model.size);
          }
        } finally {
          await map.close();
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);
});
