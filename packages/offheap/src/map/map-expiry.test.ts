import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes, OffHeapMap, struct } from '../index.js';
import { storedExpiryFilter } from '../persist/stored-value.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-expiry-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `e${dirs++}`);
const DIST = new URL('../../dist/index.js', import.meta.url).href;

/** A clock the test moves. */
function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('expiry', () => {
  it('an expired key is absent to every read at once, before the active expiry removes it', async () => {
    const c = clock();
    const map = await OffHeapMap.open<string, unknown>({ dir: freshDir(), now: c.now, threads: 1 });
    try {
      map.set('a', 1, { ttl: 100 });
      map.set('b', 2, { expiresAt: c.t + 50 });
      map.set('c', 3);
      expect(map.getEntry('a')).toMatchObject({ value: 1, expiresAt: c.t + 100 });
      expect(map.ttl('a')).toBe(100);
      expect(map.ttl('c')).toBe(-1);
      expect(map.ttl('zz')).toBe(-2);
      c.t += 50;
      expect(map.get('b')).toBeUndefined();
      expect(map.has('b')).toBe(false);
      expect(map.getBytes('b')).toBeUndefined();
      expect(map.getEntry('b')).toBeUndefined();
      expect([...map.keys()].sort()).toEqual(['a', 'c']);
      expect(map.range().entries.map(([k]) => k)).toEqual(['a', 'c']);
      expect(
        map
          .scanSync((cur) => {
            const keys: string[] = [];
            while (cur.next()) keys.push(cur.key);
            return keys;
          })
          .flat()
          .sort(),
      ).toEqual(['a', 'c']);
      expect(map.size).toBe(3); // not removed yet: size counts the index
      expect(map.stats().expiring).toBe(2);
      expect(map.expireNow()).toBe(1);
      expect(map.size).toBe(2);
      expect(map.stats().expiring).toBe(1);
      // ifAbsent passes on an expired key; ifVersion of it fails as absent.
      c.t += 50;
      expect(() => map.set('a', 9, { ifVersion: 1 })).toThrow(
        expect.objectContaining({ code: OffHeapErrorCodes.VERSION_MISMATCH, current: null }),
      );
      map.set('a', 9, { ifAbsent: true });
      expect(map.getEntry('a')).toMatchObject({ value: 9, expiresAt: 0 });
      for (const bad of [{ ttl: 0 }, { ttl: -1 }, { ttl: Number.NaN }, { expiresAt: 0 }, { ttl: 1, expiresAt: 5 }]) {
        expect(() => map.set('x', 1, bad)).toThrow(
          expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
        );
      }
    } finally {
      await map.close();
    }
  });

  it('expire, persist and ttl; incr keeps the expiry; a struct view cannot locate an expired key', () => {
    const c = clock();
    const map = new OffHeapMap<string, unknown>({ now: c.now, threads: 1 });
    expect(map.expire('nope', 10)).toBe(false);
    map.set('k', 5);
    expect(map.persist('k')).toBe(false);
    const v0 = map.getEntry('k')!.version;
    expect(map.expire('k', 1000)).toBe(true);
    expect(map.getEntry('k')!.version).toBeGreaterThan(v0);
    expect(map.ttl('k')).toBe(1000);
    expect(map.incr('k', 2).value).toBe(7);
    expect(map.ttl('k')).toBe(1000);
    expect(map.persist('k')).toBe(true);
    expect(map.ttl('k')).toBe(-1);
    expect(map.expire('k', 0)).toBe(true); // ≤ 0: deleted
    expect(map.has('k')).toBe(false);

    const s = new OffHeapMap({ struct: struct({ n: 'u32' }), now: c.now, threads: 1 });
    s.set('v', { n: 1 }, { ttl: 10 });
    const view = s.view();
    expect(s.locate('v', view)).toBe(true);
    c.t += 10;
    expect(s.locate('v', view)).toBe(false);
  });

  it("the engine's compactions drop a map's expired records, through the filter the map gives its engine", async () => {
    const dir = freshDir();
    const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image: false });
    map.set('gone', 1, { expiresAt: Date.now() - 1000 });
    map.set('live', 2, { ttl: 3_600_000 });
    map.set('plain', 3);
    await map.close();
    const keys = async (engine: Engine) => {
      const out: string[] = [];
      for await (const [k] of engine.iterator({ gte: Uint8Array.of(1), lt: Uint8Array.of(2), values: false })) {
        out.push(Buffer.from(k.subarray(1)).toString());
      }
      return out;
    };
    const plain = await Engine.open(dir);
    expect(await keys(plain)).toEqual(['gone', 'live', 'plain']); // never reaped: only a compaction drops it
    await plain.close();
    const engine = await Engine.open(dir, { expiryFilter: storedExpiryFilter(null) });
    await engine.compactRange();
    expect(await keys(engine)).toEqual(['live', 'plain']);
    await engine.close();
  });

  it('keeps the expiry index the size of its expiring keys when keys are rewritten with long TTLs', () => {
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    for (let i = 0; i < 20_000; i++) map.set(`k${i % 10}`, i, { ttl: 3_600_000 });
    const grown = map.stats().expiryIndexBytes;
    expect(grown).toBeGreaterThanOrEqual(20_000 * 16);
    expect(map.expireNow()).toBe(0);
    expect(map.stats().expiryIndexBytes).toBeLessThan(grown / 4);
    expect(map.stats().expiring).toBe(10);
    expect(map.ttl('k3')).toBeGreaterThan(3_599_000);
  });

  it('a checkpoint carries the expiries, in its image and in its engine', async () => {
    const c = clock();
    const map = await OffHeapMap.open<string, unknown>({ dir: freshDir(), now: c.now, threads: 1 });
    try {
      map.set('a', 1, { ttl: 100 });
      map.set('b', 2, { ttl: 500 });
      map.set('c', 3);
      const copy = join(root, `copy${dirs++}`);
      await map.checkpoint(copy);
      for (const image of [true, false]) {
        const other = await OffHeapMap.open<string, unknown>({ dir: copy, now: c.now, threads: 1, image });
        expect([other.ttl('a'), other.ttl('b'), other.ttl('c')]).toEqual([100, 500, -1]);
        c.t += 100;
        expect(other.has('a')).toBe(false);
        c.t -= 100;
        await other.close();
      }
    } finally {
      await map.close();
    }
  });

  it('worker-thread readers and scans do not see an expired key (their own clock)', async () => {
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    try {
      map.set('gone', 1, { expiresAt: Date.now() - 1 });
      map.set('here', 2, { ttl: 60_000 });
      expect(await map.getMany(['gone', 'here'])).toEqual([undefined, 2]);
      const { attach } = await import('../index.js');
      const reader = attach<string, unknown>(map.share());
      expect(reader.get('gone')).toBeUndefined();
      expect(reader.get('here')).toBe(2);
      reader.close();
    } finally {
      await map.close();
    }
  });

  it('the active expiry runs by itself, and close() leaves no timer', async () => {
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    for (let i = 0; i < 500; i++) map.set(`k${i}`, i, { ttl: 1 });
    const deadline = Date.now() + 10_000;
    while (map.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(map.size).toBe(0);
    await map.close();
    // No handle of the map keeps the process up: a child that uses and closes a map exits by itself.
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { OffHeapMap } from ${JSON.stringify(DIST)}; const m = new OffHeapMap({ threads: 1 }); m.set('a', 1, { ttl: 60000 }); await m.close();`,
      ],
      { timeout: 20_000 },
    );
    expect(child.status).toBe(0);
  });
});

type Op =
  | { t: 'set'; k: string; v: number; ttl: number | null }
  | { t: 'del'; k: string }
  | { t: 'expire'; k: string; ttl: number }
  | { t: 'persist'; k: string }
  | { t: 'incr'; k: string; d: number }
  | { t: 'cas'; k: string; v: number }
  | { t: 'tick'; ms: number }
  | { t: 'reap' }
  | { t: 'reopen'; image: boolean };

const key = fc.integer({ min: 0, max: 10 }).map((i) => `k${i}`);
const ttl = fc.integer({ min: 1, max: 300 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('set' as const),
      k: key,
      v: fc.integer({ min: -1e6, max: 1e6 }),
      ttl: fc.option(ttl, { nil: null }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('del' as const), k: key }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('expire' as const), k: key, ttl: fc.integer({ min: -5, max: 300 }) }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('persist' as const), k: key }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('incr' as const), k: key, d: fc.integer({ min: -100, max: 100 }) }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('cas' as const), k: key, v: fc.integer() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 200 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reap' as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reopen' as const), image: fc.boolean() }) },
);

describe('expiry against a model with a controllable clock', () => {
  it('set/ttl/expire/persist/incr/checks interleaved with time, reaping and reopen by image and by scan', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const dir = freshDir();
        const c = clock();
        let map = await OffHeapMap.open<string, number>({ dir, now: c.now, threads: 1 });
        const model = new Map<string, { value: number; expiresAt: number; version: number }>();
        const live = (k: string) => {
          const e = model.get(k);
          if (e !== undefined && e.expiresAt !== 0 && e.expiresAt <= c.t) {
            model.delete(k);
            return undefined;
          }
          return e;
        };
        try {
          for (const o of ops) {
            if (o.t === 'set') {
              const version = map.setEntry(o.k, o.v, o.ttl === null ? undefined : { ttl: o.ttl });
              model.set(o.k, { value: o.v, expiresAt: o.ttl === null ? 0 : c.t + o.ttl, version });
            } else if (o.t === 'del') {
              expect(map.delete(o.k)).toBe(live(o.k) !== undefined);
              model.delete(o.k);
            } else if (o.t === 'expire') {
              const e = live(o.k);
              expect(map.expire(o.k, o.ttl)).toBe(e !== undefined);
              if (e !== undefined && o.ttl <= 0) model.delete(o.k);
              else if (e !== undefined)
                model.set(o.k, { ...e, expiresAt: c.t + o.ttl, version: map.getEntry(o.k)!.version });
            } else if (o.t === 'persist') {
              const e = live(o.k);
              expect(map.persist(o.k)).toBe(e !== undefined && e.expiresAt !== 0);
              if (e !== undefined && e.expiresAt !== 0)
                model.set(o.k, { ...e, expiresAt: 0, version: map.getEntry(o.k)!.version });
            } else if (o.t === 'incr') {
              const e = live(o.k);
              const { value, version } = map.incr(o.k, o.d);
              expect(value).toBe((e?.value ?? 0) + o.d);
              model.set(o.k, { value: value as number, expiresAt: e?.expiresAt ?? 0, version });
            } else if (o.t === 'cas') {
              const e = live(o.k);
              const b = map
                .batch()
                .check(e === undefined ? { key: o.k, absent: true } : { key: o.k, version: e.version });
              b.set(o.k, o.v, { ttl: 100 });
              const { sequence } = await b.write();
              model.set(o.k, { value: o.v, expiresAt: c.t + 100, version: sequence! });
            } else if (o.t === 'tick') {
              c.t += o.ms;
            } else if (o.t === 'reap') {
              map.expireNow();
            } else {
              await map.close();
              map = await OffHeapMap.open<string, number>({ dir, image: o.image, now: c.now, threads: 1 });
            }
            for (const k of [...model.keys()]) live(k);
            for (let i = 0; i <= 10; i++) {
              const e = model.get(`k${i}`);
              expect(map.getEntry(`k${i}`)).toEqual(e);
              expect(map.ttl(`k${i}`)).toBe(e === undefined ? -2 : e.expiresAt === 0 ? -1 : e.expiresAt - c.t);
            }
            expect([...map.keys()].sort()).toEqual([...model.keys()].sort());
          }
          map.expireNow();
          expect(map.size).toBe(model.size);
        } finally {
          await map.close();
        }
      }),
      { numRuns: 25 },
    );
  }, 180_000);
});
