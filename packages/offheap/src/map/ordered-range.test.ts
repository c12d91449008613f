import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { OffHeapMap } from './offheap-map.js';
import type { RangeOptions } from './ordered-range.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-range-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `r${dirs++}`);

/** Keys over a few code points whose UTF-8 orders differently from UTF-16 (U+FFFF after U+1F600 in UTF-16 only). */
const key = fc
  .array(fc.constantFrom('a', 'b', 'é', '\uffff', '😀', '\u0000'), { maxLength: 4 })
  .map((parts) => parts.join(''));
const value = fc.uint8Array({ maxLength: 20 });
type Op = { set: [string, Uint8Array] } | { del: string };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(key, value).map((set) => ({ set })) },
  { weight: 1, arbitrary: key.map((del) => ({ del })) },
);
const query: fc.Arbitrary<RangeOptions<string>> = fc.record(
  {
    prefix: key,
    gte: key,
    gt: key,
    lt: key,
    limit: fc.integer({ min: 1, max: 12 }),
    maxBytes: fc.integer({ min: 1, max: 60 }),
  },
  { requiredKeys: ['limit'] },
);

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** What `range` must answer, from a plain Map: the selected keys in UTF-8 byte order, cut at limit / maxBytes. */
function expected(model: Map<string, Uint8Array>, q: RangeOptions<string>) {
  const inRange = [...model.keys()]
    .filter((k) => q.prefix === undefined || utf8(k).subarray(0, utf8(q.prefix).length).equals(utf8(q.prefix)))
    .filter((k) => q.gte === undefined || Buffer.compare(utf8(k), utf8(q.gte)) >= 0)
    .filter((k) => q.gt === undefined || Buffer.compare(utf8(k), utf8(q.gt)) > 0)
    .filter((k) => q.lt === undefined || Buffer.compare(utf8(k), utf8(q.lt)) < 0)
    .sort((a, b) => Buffer.compare(utf8(a), utf8(b)));
  const entries: [string, number[]][] = [];
  let bytes = 0;
  for (const k of inRange) {
    if (entries.length === q.limit || bytes >= (q.maxBytes ?? Number.POSITIVE_INFINITY)) break;
    entries.push([k, Array.from(model.get(k)!)]);
    bytes += utf8(k).length + model.get(k)!.length;
  }
  return { entries, more: entries.length < inRange.length };
}

function apply(m: OffHeapMap<string, unknown>, model: Map<string, Uint8Array>, ops: Op[]): void {
  for (const o of ops) {
    if ('set' in o) {
      m.setBytes(o.set[0], o.set[1]);
      model.set(o.set[0], o.set[1]);
    } else {
      m.delete(o.del);
      model.delete(o.del);
    }
  }
}

function check(m: OffHeapMap<string, unknown>, model: Map<string, Uint8Array>, queries: RangeOptions<string>[]): void {
  for (const q of queries) {
    const page = m.range(q);
    expect({ entries: page.entries.map(([k, v]) => [k, Array.from(v)]), more: page.more }).toEqual(expected(model, q));
  }
  // Paging by the last key visits every key once, in order.
  const all: string[] = [];
  let gt: string | undefined;
  for (;;) {
    const page = m.range({ gt, limit: 3 });
    all.push(...page.entries.map(([k]) => k));
    if (!page.more) break;
    gt = page.entries[page.entries.length - 1]![0];
  }
  expect(all).toEqual(expected(model, { limit: 1e9 }).entries.map(([k]) => k));
}

describe('OffHeapMap.range against a sorted Map', () => {
  it('memory-only: one pass over the index gives the page in UTF-8 order', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.array(query, { maxLength: 8 }), (ops, queries) => {
        const m = new OffHeapMap<string, unknown>({ threads: 1 });
        const model = new Map<string, Uint8Array>();
        apply(m, model, ops);
        check(m, model, queries);
      }),
      { numRuns: 300 },
    );
  });

  it('persisted: the engine’s sorted keys (memtable and tables, deletes included), the map’s values', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 80 }),
        fc.array(op, { maxLength: 30 }),
        fc.array(query, { maxLength: 8 }),
        async (before, after, queries) => {
          const dir = freshDir();
          // A tiny write buffer puts most of the writes in tables, the rest in memtables.
          const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1, engine: { writeBufferSize: 4096 } });
          const model = new Map<string, Uint8Array>();
          apply(m, model, before);
          await m.close();
          const back = await OffHeapMap.open<string, unknown>({ dir, threads: 1, engine: { writeBufferSize: 4096 } });
          apply(back, model, after);
          check(back, model, queries);
          await back.close();
          rmSync(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 20 },
    );
  });

  it('bytes keys: byte order, prefixes ending in 0xff', () => {
    const m = new OffHeapMap<Uint8Array, unknown>({ keys: 'bytes', threads: 1 });
    const keys = [[0xff], [0xff, 0xff], [0xff, 0xff, 0], [0xfe, 0xff], [0], [], [1, 2]].map((k) => Uint8Array.from(k));
    for (const k of keys) m.setBytes(k, Uint8Array.of(k.length));
    const got = (o: RangeOptions<Uint8Array>) => m.range({ limit: 100, ...o }).entries.map(([k]) => Array.from(k));
    expect(got({})).toEqual([[], [0], [1, 2], [0xfe, 0xff], [0xff], [0xff, 0xff], [0xff, 0xff, 0]]);
    expect(got({ prefix: Uint8Array.of(0xff, 0xff) })).toEqual([
      [0xff, 0xff],
      [0xff, 0xff, 0],
    ]);
    expect(got({ prefix: Uint8Array.of(0xfe) })).toEqual([[0xfe, 0xff]]);
    expect(got({ gt: Uint8Array.of(0xff), lt: Uint8Array.of(0xff, 0xff, 0) })).toEqual([[0xff, 0xff]]);
    expect(got({ gte: Uint8Array.of(2), lt: Uint8Array.of(1) })).toEqual([]);
    // A Buffer bound (whose slice() is a view) is read, never written: the prefix's end is computed in a copy.
    const prefix = Buffer.from([0xfe]);
    expect(got({ prefix })).toEqual([[0xfe, 0xff]]);
    expect(Array.from(prefix)).toEqual([0xfe]);
  });

  it('refuses bad options, bounds with a lone surrogate, and a closed map', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    const invalid = expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT });
    expect(() => m.range({ limit: 0 })).toThrow(invalid);
    expect(() => m.range({ limit: 1.5 })).toThrow(invalid);
    expect(() => m.range({ maxBytes: 0 })).toThrow(invalid);
    expect(() => m.range({ prefix: '\ud800' })).toThrow(invalid);
    expect(() => m.range({ gt: 'a\udc00' })).toThrow(invalid);
    expect(() => m.range({ lt: 1 as unknown as string })).toThrow(invalid);
    await m.close();
    expect(() => m.range()).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
  });
});
