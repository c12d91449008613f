// Model test (HEAPLESS_MODEL_RUNS=n for more runs than the default 20): random sequences of Level operations on a
// HeaplessLevel checked against a plain Map, through every write form (put, del, array and chained batches, clear
// with ranges), every read form (get, getMany, entry/key/value iterators with ranges, reverse, limit and seek,
// nextv and all), explicit snapshots and reopening. Tiny engine buffers make flushes and compactions constant.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AbstractSnapshot } from 'abstract-level';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HeaplessLevel } from './index.js';

type Range = { gt?: string; gte?: string; lt?: string; lte?: string; reverse: boolean; limit: number };
type Op =
  | { t: 'put'; k: string; v: string }
  | { t: 'del'; k: string }
  | { t: 'batch'; chained: boolean; ops: Array<{ k: string; v: string | null }> }
  | { t: 'clear'; range: Range }
  | {
      t: 'read';
      range: Range;
      mode: 'iterator' | 'keys' | 'values';
      how: 'all' | 'nextv' | 'next';
      seek?: string;
      snap: number;
    }
  | { t: 'getMany'; keys: string[]; snap: number }
  | { t: 'snapshot' }
  | { t: 'closeSnapshot'; i: number }
  | { t: 'reopen' };

const key = fc.stringMatching(/^[a-d]{0,2}$/);
const value = fc.string({ maxLength: 120 });
const range: fc.Arbitrary<Range> = fc.record(
  {
    gt: key,
    gte: key,
    lt: key,
    lte: key,
    reverse: fc.boolean(),
    limit: fc.integer({ min: -1, max: 12 }),
  },
  { requiredKeys: ['reverse', 'limit'] },
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 30, arbitrary: fc.record({ t: fc.constant('put' as const), k: key, v: value }) },
  { weight: 10, arbitrary: fc.record({ t: fc.constant('del' as const), k: key }) },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      chained: fc.boolean(),
      ops: fc.array(fc.record({ k: key, v: fc.option(value, { nil: null }) }), { minLength: 1, maxLength: 30 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('clear' as const), range }) },
  {
    weight: 10,
    arbitrary: fc.record(
      {
        t: fc.constant('read' as const),
        range,
        mode: fc.constantFrom('iterator' as const, 'keys' as const, 'values' as const),
        how: fc.constantFrom('all' as const, 'nextv' as const, 'next' as const),
        seek: key,
        snap: fc.integer({ min: -1, max: 4 }),
      },
      { requiredKeys: ['t', 'range', 'mode', 'how', 'snap'] },
    ),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('getMany' as const),
      keys: fc.array(key, { maxLength: 6 }),
      snap: fc.integer({ min: -1, max: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('snapshot' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('closeSnapshot' as const), i: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reopen' as const) }) },
);

/** What the three kinds of iterator have in common, as this test uses them. */
interface Cursor {
  seek(target: string): void;
  next(): Promise<unknown>;
  nextv(size: number): Promise<unknown[]>;
  all(): Promise<unknown[]>;
  close(): Promise<void>;
}

const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** abstract-level's range rules: gte wins over gt and lte over lt; reverse, then limit; a seek skips ahead. */
function expectedKeys(model: Map<string, string>, r: Range, seek?: string): string[] {
  let keys = [...model.keys()].sort(cmp);
  if (r.gte !== undefined) keys = keys.filter((k) => cmp(k, r.gte!) >= 0);
  else if (r.gt !== undefined) keys = keys.filter((k) => cmp(k, r.gt!) > 0);
  if (r.lte !== undefined) keys = keys.filter((k) => cmp(k, r.lte!) <= 0);
  else if (r.lt !== undefined) keys = keys.filter((k) => cmp(k, r.lt!) < 0);
  if (r.reverse) keys.reverse();
  if (seek !== undefined) keys = keys.filter((k) => (r.reverse ? cmp(k, seek) <= 0 : cmp(k, seek) >= 0));
  return r.limit >= 0 ? keys.slice(0, r.limit) : keys;
}

const OPTIONS = {
  writeBufferSize: 4096,
  blockSize: 256,
  targetFileSize: 1024,
  level0CompactionTrigger: 2,
  maxBytesForLevelBase: 4096,
  levelSizeMultiplier: 2,
  numLevels: 4,
};

async function run(ops: Op[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'heapless-level-model-'));
  const db = new HeaplessLevel(dir, OPTIONS);
  await db.open(); // db.snapshot() needs an open database; the other calls would wait for the deferred open
  let model = new Map<string, string>();
  let snaps: Array<{ snapshot: AbstractSnapshot; model: Map<string, string> }> = [];
  const view = (i: number) => (i >= 0 && i < snaps.length ? snaps[i]! : { snapshot: undefined, model });
  try {
    for (const [step, o] of ops.entries()) {
      const where = `step ${step}: ${JSON.stringify(o)}`;
      switch (o.t) {
        case 'put':
          await db.put(o.k, o.v);
          model.set(o.k, o.v);
          expect(await db.get(o.k), where).toBe(o.v);
          break;
        case 'del':
          await db.del(o.k);
          model.delete(o.k);
          expect(db.getSync(o.k), where).toBeUndefined();
          break;
        case 'batch':
          if (o.chained) {
            const batch = db.batch();
            for (const b of o.ops) b.v === null ? batch.del(b.k) : batch.put(b.k, b.v);
            await batch.write();
          } else {
            await db.batch(
              o.ops.map((b) => (b.v === null ? { type: 'del', key: b.k } : { type: 'put', key: b.k, value: b.v })),
            );
          }
          for (const b of o.ops) b.v === null ? model.delete(b.k) : model.set(b.k, b.v);
          break;
        case 'clear': {
          await db.clear(o.range);
          const next = new Map(model);
          for (const k of expectedKeys(model, o.range)) next.delete(k);
          model = next;
          break;
        }
        case 'read': {
          const v = view(o.snap);
          const keys = expectedKeys(v.model, o.range, o.seek);
          const expected =
            o.mode === 'iterator'
              ? keys.map((k) => [k, v.model.get(k)])
              : o.mode === 'keys'
                ? keys
                : keys.map((k) => v.model.get(k));
          const options = { ...o.range, snapshot: v.snapshot };
          const it: Cursor =
            o.mode === 'iterator' ? db.iterator(options) : o.mode === 'keys' ? db.keys(options) : db.values(options);
          if (o.seek !== undefined) it.seek(o.seek);
          let got: unknown[] = [];
          if (o.how === 'all') got = await it.all();
          else {
            for (;;) {
              const batch = o.how === 'nextv' ? await it.nextv(3) : [await it.next()].filter((x) => x !== undefined);
              if (batch.length === 0) break;
              got.push(...batch);
            }
            await it.close();
          }
          expect(got, where).toEqual(expected);
          break;
        }
        case 'getMany': {
          const v = view(o.snap);
          expect(await db.getMany(o.keys, { snapshot: v.snapshot }), where).toEqual(o.keys.map((k) => v.model.get(k)));
          break;
        }
        case 'snapshot':
          if (snaps.length < 5) snaps.push({ snapshot: db.snapshot(), model: new Map(model) });
          break;
        case 'closeSnapshot':
          if (o.i < snaps.length) {
            await snaps[o.i]!.snapshot.close();
            snaps = snaps.filter((_, i) => i !== o.i);
          }
          break;
        case 'reopen':
          await db.close(); // closes the snapshots too
          snaps = [];
          await db.open();
          break;
      }
    }
    expect(await db.iterator().all()).toEqual([...model.keys()].sort(cmp).map((k) => [k, model.get(k)]));
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('HeaplessLevel against a Map', () => {
  it('agrees on every read after any sequence of writes, clears, snapshots and reopens', async () => {
    const runs = Number(process.env.HEAPLESS_MODEL_RUNS ?? 20);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 150, size: 'max' }), (ops) => run(ops)),
      { numRuns: runs },
    );
  });
});
