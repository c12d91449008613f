// Model test (HEAPLESS_MODEL_RUNS=n for more runs than the default 8): random sequences of engine operations checked against a plain Map, with tiny buffers and tables so
// that flushes, compactions and reopen (WAL replay) happen constantly. Any divergence fails with a shrunk sequence.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENTRY_HEADER_SIZE, Engine, type EngineOptions, type IteratorOptions } from '@heapless/engine';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

type Snap = ReturnType<Engine['snapshot']>;
type Op =
  | { t: 'put'; k: string; v: string; probe: string }
  | { t: 'del'; k: string; probe: string }
  | { t: 'batch'; ops: Array<{ k: string; v: string | null }> }
  | { t: 'get'; k: string }
  | { t: 'snapshot' }
  | { t: 'release'; i: number }
  | { t: 'snapGet'; i: number; k: string }
  | {
      t: 'iter';
      lo?: [string, boolean];
      hi?: [string, boolean];
      reverse: boolean;
      limit: number;
      snap: number;
      seek?: string;
    }
  | { t: 'reopen' }
  | { t: 'flush' }
  | { t: 'compact'; from?: string; to?: string };

// Tiny buffers and tables so that flushes and compactions happen every few dozen writes. With the low level-0
// triggers, writes yield to background work constantly; with the high ones, frozen memtables stay in the read path
// for many operations.
const optionsFor = (lowTriggers: boolean): EngineOptions => ({
  writeBufferSize: 4096,
  blockSize: 256,
  targetFileSize: 1024,
  level0CompactionTrigger: 2,
  level0SlowdownTrigger: lowTriggers ? 3 : 40,
  level0StopTrigger: lowTriggers ? 6 : 50,
  maxBytesForLevelBase: 4096,
  levelSizeMultiplier: 2,
  numLevels: 4,
});

const key = fc.stringMatching(/^[a-e]{0,3}$/);
const value = fc.string({ maxLength: 40 });
const bound = fc.option(fc.tuple(key, fc.boolean()), { nil: undefined });
const op: fc.Arbitrary<Op> = fc.oneof(
  // Every write also reads one key back (`probe`), so that reads meet every state of the memtables.
  { weight: 30, arbitrary: fc.record({ t: fc.constant('put' as const), k: key, v: value, probe: key }) },
  { weight: 10, arbitrary: fc.record({ t: fc.constant('del' as const), k: key, probe: key }) },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      ops: fc.array(fc.record({ k: key, v: fc.option(value, { nil: null }) }), { maxLength: 30 }),
    }),
  },
  { weight: 10, arbitrary: fc.record({ t: fc.constant('get' as const), k: key }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('snapshot' as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('release' as const), i: fc.nat(5) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('snapGet' as const), i: fc.nat(5), k: key }) },
  {
    weight: 6,
    arbitrary: fc.record(
      {
        t: fc.constant('iter' as const),
        lo: bound,
        hi: bound,
        reverse: fc.boolean(),
        limit: fc.integer({ min: -1, max: 20 }),
        snap: fc.integer({ min: -1, max: 5 }),
        seek: fc.option(key, { nil: undefined }),
      },
      { requiredKeys: ['t', 'reverse', 'limit', 'snap'] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reopen' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('flush' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        t: fc.constant('compact' as const),
        from: fc.option(key, { nil: undefined }),
        to: fc.option(key, { nil: undefined }),
      },
      { requiredKeys: ['t'] },
    ),
  },
);

const dec = new TextDecoder();
const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function expectedRange(model: Map<string, string>, o: Extract<Op, { t: 'iter' }>): string[] {
  let keys = [...model.keys()].sort(cmp);
  if (o.lo) keys = keys.filter((k) => (o.lo![1] ? cmp(k, o.lo![0]) > 0 : cmp(k, o.lo![0]) >= 0));
  if (o.hi) keys = keys.filter((k) => (o.hi![1] ? cmp(k, o.hi![0]) < 0 : cmp(k, o.hi![0]) <= 0));
  if (o.reverse) keys.reverse();
  if (o.seek !== undefined) {
    const s = o.seek;
    keys = keys.filter((k) => (o.reverse ? cmp(k, s) <= 0 : cmp(k, s) >= 0));
  }
  if (o.limit >= 0) keys = keys.slice(0, o.limit);
  return keys.map((k) => `${k}=${model.get(k)}`);
}

async function run(lowTriggers: boolean, ops: Op[]): Promise<void> {
  const OPTIONS = optionsFor(lowTriggers);
  const dir = mkdtempSync(join(tmpdir(), 'heapless-model-'));
  let db = await Engine.open(dir, OPTIONS);
  const model = new Map<string, string>();
  let snaps: Array<{ snap: Snap; model: Map<string, string> }> = [];
  const probe = (k: string, where: string) => {
    const v = db.getSync(k);
    expect(v === undefined ? undefined : dec.decode(v), `${where} probe ${k}`).toBe(model.get(k));
  };
  try {
    for (const [step, o] of ops.entries()) {
      const where = `step ${step}: ${JSON.stringify(o)}`;
      switch (o.t) {
        case 'put':
          await db.put(o.k, o.v);
          model.set(o.k, o.v);
          probe(o.probe, where);
          break;
        case 'del':
          await db.delete(o.k);
          model.delete(o.k);
          probe(o.probe, where);
          break;
        case 'batch':
          await db.write(
            o.ops.map((b) => (b.v === null ? { type: 'del', key: b.k } : { type: 'put', key: b.k, value: b.v })),
          );
          for (const b of o.ops) {
            if (b.v === null) model.delete(b.k);
            else model.set(b.k, b.v);
          }
          break;
        case 'get': {
          const v = await db.get(o.k);
          expect(v === undefined ? undefined : dec.decode(v), where).toBe(model.get(o.k));
          break;
        }
        case 'snapshot':
          snaps.push({ snap: db.snapshot(), model: new Map(model) });
          break;
        case 'release':
          if (snaps.length > 0) snaps.splice(o.i % snaps.length, 1)[0]!.snap.release();
          break;
        case 'snapGet':
          if (snaps.length > 0) {
            const s = snaps[o.i % snaps.length]!;
            const v = db.getSync(o.k, { snapshot: s.snap });
            expect(v === undefined ? undefined : dec.decode(v), where).toBe(s.model.get(o.k));
          }
          break;
        case 'iter': {
          const s = o.snap >= 0 && snaps.length > 0 ? snaps[o.snap % snaps.length] : undefined;
          const opts: IteratorOptions = { reverse: o.reverse, limit: o.limit, snapshot: s?.snap };
          if (o.lo) opts[o.lo[1] ? 'gt' : 'gte'] = o.lo[0];
          if (o.hi) opts[o.hi[1] ? 'lt' : 'lte'] = o.hi[0];
          const it = db.iterator(opts);
          if (o.seek !== undefined) it.seek(o.seek);
          const got: string[] = [];
          // Mix single steps, batches and bulk reads into a small buffer (grown when an entry does not fit).
          let into = new Uint8Array(24);
          for (;;) {
            const mode = got.length % 3;
            if (mode === 2) {
              const end = it.nextvInto(into, 4);
              if (end < 0) {
                into = new Uint8Array(4 - end);
                continue;
              }
              if (end === 4) break;
              for (let p = 4; p < end; ) {
                const kl = into[p]! | (into[p + 1]! << 8) | (into[p + 2]! << 16) | (into[p + 3]! << 24);
                const vl = into[p + 4]! | (into[p + 5]! << 8) | (into[p + 6]! << 16) | (into[p + 7]! << 24);
                p += ENTRY_HEADER_SIZE;
                got.push(`${dec.decode(into.subarray(p, p + kl))}=${dec.decode(into.subarray(p + kl, p + kl + vl))}`);
                p += kl + vl;
              }
              continue;
            }
            const batch = mode === 0 ? await it.nextv(3) : [await it.next()].filter((e) => e !== undefined);
            if (batch.length === 0) break;
            for (const [k, v] of batch) got.push(`${dec.decode(k)}=${dec.decode(v)}`);
          }
          await it.close();
          const expected = expectedRange(s?.model ?? model, o);
          // The limit counts entries returned, seek or not; with a seek, it applies after the seek.
          expect(got, where).toEqual(expected);
          break;
        }
        case 'reopen':
          await db.close();
          snaps = [];
          db = await Engine.open(dir, OPTIONS);
          break;
        case 'flush':
          await db.flush();
          break;
        case 'compact':
          await db.compactRange(o.from, o.to);
          break;
      }
    }
    // Final full comparison, then once more after a reopen.
    const all = expectedRange(model, { t: 'iter', reverse: false, limit: -1, snap: -1 });
    const got: string[] = [];
    for await (const [k, v] of db.iterator()) got.push(`${dec.decode(k)}=${dec.decode(v)}`);
    expect(got).toEqual(all);
    await db.close();
    db = await Engine.open(dir, OPTIONS);
    const again: string[] = [];
    for await (const [k, v] of db.iterator()) again.push(`${dec.decode(k)}=${dec.decode(v)}`);
    expect(again).toEqual(all);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('engine model test against a Map', () => {
  it('never diverges over random operations with flushes, compactions, snapshots and reopens', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(op, { minLength: 100, maxLength: 400, size: 'max' }), run),
      {
        numRuns: Number(process.env.HEAPLESS_MODEL_RUNS ?? 8),
      },
    );
  }, 300_000);
});
