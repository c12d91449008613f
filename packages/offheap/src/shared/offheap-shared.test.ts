import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  array,
  OffHeapErrorCodes,
  OffHeapMap,
  OffHeapMapReader,
  type SharedMapHandle,
  struct,
  utf8,
  type WorkerFunction,
} from '../index.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/**
 * The reader worker: checks every value it reads against the invariant the owner keeps (all parts of a value
 * derive from one number), counts reads and violations, and stops when the owner raises the flag.
 */
const READER = `
const { workerData, parentPort } = require('node:worker_threads');
import(${JSON.stringify(DIST)}).then(({ OffHeapMapReader }) => {
  const { handle, stop, keys, kind } = workerData;
  const r = OffHeapMapReader.attach(handle);
  const view = kind === 'struct' ? r.view() : null;
  let reads = 0, found = 0, bad = 0, sample = null;
  parentPort.postMessage('ready');
  while (Atomics.load(stop, 0) === 0) {
    const key = 'k' + (reads % keys);
    reads++;
    if (kind === 'struct') {
      if (!r.locate(key, view)) continue;
      found++;
      const n = view.n;
      const ok = view.copy === n && view.neg === -n && view.text === 't'.repeat(n % 20) + n &&
        view.arr.get(0) === n && view.arr.get(2) === n * 2 && view.big === BigInt(n);
      if (!ok) { bad++; sample = view.toObject(); }
    } else {
      const v = r.get(key);
      if (v === undefined) continue;
      found++;
      const ok = v.s === 'x'.repeat(v.n % 97) + v.n && v.a.length === v.n % 5 && v.a.every((e) => e === v.n) && v.k === key;
      if (!ok) { bad++; sample = v; }
    }
  }
  r.close();
  parentPort.postMessage({ reads, found, bad, sample: sample === null ? null : String(JSON.stringify(sample, (k, x) => typeof x === 'bigint' ? String(x) : x)) });
});
`;

function startReader(handle: SharedMapHandle, stop: Int32Array, keys: number, kind: 'msgpack' | 'struct') {
  const w = new Worker(READER, { eval: true, workerData: { handle, stop, keys, kind }, transferList: [handle.port] });
  const ready = new Promise<void>((resolve) => w.once('message', () => resolve()));
  const done = new Promise<{ reads: number; found: number; bad: number; sample: string | null }>((resolve, reject) => {
    w.once('error', reject);
    w.on('message', (m) => {
      if (typeof m === 'object') resolve(m);
    });
  });
  return { ready, done, worker: w };
}

type Torn = { n: number; s: string; a: number[]; k: string };

/** Overwrites change sizes (blocks move and are reused), deletes free blocks, new keys grow the index. */
async function expectNoTornReads(map: OffHeapMap<string, Torn>): Promise<void> {
  const KEYS = 400;
  for (let i = 0; i < KEYS / 2; i++) {
    map.set(`k${i}`, { n: i, s: 'x'.repeat(i % 97) + i, a: new Array(i % 5).fill(i), k: `k${i}` });
  }
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const r = startReader(map.share(), stop, KEYS, 'msgpack');
  await r.ready;
  for (let round = 0; round < 300; round++) {
    for (let i = 0; i < KEYS; i++) {
      const n = round * 1000 + i;
      const k = `k${(i * 7 + round) % KEYS}`;
      if ((n & 15) === 3) map.delete(k);
      else map.set(k, { n, s: 'x'.repeat(n % 97) + n, a: new Array(n % 5).fill(n), k });
    }
    if (round % 50 === 0) for (let j = 0; j < 2000; j++) map.set(`grow${round}:${j}`, { n: j, s: '', a: [], k: '' });
    await new Promise((res) => setImmediate(res));
  }
  Atomics.store(stop, 0, 1);
  const res = await r.done;
  expect(res.sample).toBeNull();
  expect(res.bad).toBe(0);
  expect(res.found).toBeGreaterThan(0);
}

describe('OffHeapMap shared with reader threads', () => {
  it('a worker reading msgpack values while the owner writes never sees a torn value', async () => {
    const map = new OffHeapMap<string, Torn>();
    closers.push(() => map.close());
    await expectNoTornReads(map);
  });

  it('the same holds on a map loaded from its image (memory mapped from the file, copied on write)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'offheap-shared-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const first = await OffHeapMap.open<string, Torn>({ dir });
    for (let i = 0; i < 5000; i++) first.set(`pre${i}`, { n: i, s: '', a: [], k: '' });
    await first.close();
    const map = await OffHeapMap.open<string, Torn>({ dir });
    closers.unshift(() => map.close());
    expect(map.stats().loadedFrom).toBe('image');
    await expectNoTornReads(map);
    expect(map.get('pre4999')).toEqual({ n: 4999, s: '', a: [], k: '' });
  });

  it('a worker reading struct views while the owner writes fields in place never sees a torn record', async () => {
    const T = struct({ n: 'u32', text: utf8(30), copy: 'u32', neg: 'i32', arr: array('u32', 3), big: 'u64' });
    const map = new OffHeapMap<string, unknown, typeof T.fields>({ struct: T });
    closers.push(() => map.close());
    const KEYS = 64;
    const rec = (n: number) => ({
      n,
      text: 't'.repeat(n % 20) + n,
      copy: n,
      neg: -n,
      arr: [n, 0, n * 2],
      big: BigInt(n),
    });
    for (let i = 0; i < KEYS; i++) map.set(`k${i}`, rec(i));
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const r = startReader(map.share(), stop, KEYS, 'struct');
    await r.ready;
    const v = map.view();
    for (let n = 100; n < 60_000; n++) {
      const k = `k${n % KEYS}`;
      if (n % 3 === 0) map.set(k, rec(n));
      else {
        map.locate(k, v);
        v.assign(rec(n));
      }
      if (n % 1000 === 0) await new Promise((res) => setImmediate(res));
    }
    Atomics.store(stop, 0, 1);
    const res = await r.done;
    expect(res.sample).toBeNull();
    expect(res.bad).toBe(0);
    expect(res.found).toBeGreaterThan(0);
  });

  it('a reader follows growth and new segments, and fails with CLOSED after the owner closes', async () => {
    const map = new OffHeapMap<string, number>();
    const reader = OffHeapMapReader.attach<string, number>(map.share());
    expect(reader.get('a')).toBeUndefined();
    for (let i = 0; i < 50_000; i++) map.set(`key:${i}`, i);
    expect(reader.size).toBe(50_000);
    for (let i = 0; i < 50_000; i += 997) expect(reader.get(`key:${i}`)).toBe(i);
    expect(reader.has('key:49999')).toBe(true);
    map.delete('key:49999');
    expect(reader.has('key:49999')).toBe(false);
    expect(Array.from(reader.getBytes('key:1')!)).toEqual(Array.from(map.getBytes('key:1')!));
    await map.close();
    expect(() => reader.get('key:1')).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    reader.close();
  });

  it('runs scan, filter and getMany on worker threads, matching the single-threaded scan', async () => {
    const map = new OffHeapMap<string, { age: number; name: string }>({ threads: 2 });
    closers.push(() => map.close());
    for (let i = 0; i < 20_000; i++) map.set(`u${i}`, { age: i % 90, name: `n${i}` });
    const scanModule = `data:text/javascript,${encodeURIComponent(`
      export function countOlder(cursor, min) { let n = 0; while (cursor.next()) if (cursor.value.age > min) n++; return n; }
      export default function (value, key, arg) { return value.age === arg && key.endsWith('7'); }
    `)}`;
    const parts = await map.scan<number>({ module: scanModule, name: 'countOlder', arg: 50 });
    const single = map.scanSync((c, min) => {
      let n = 0;
      while (c.next()) if (c.value.age > (min as number)) n++;
      return n;
    }, 50);
    const total = parts.reduce((a, b) => a + b, 0);
    expect(total).toBe(single.reduce((a, b) => a + b, 0));
    expect(total).toBe([...map.values()].filter((v) => v.age > 50).length);
    const hits = await map.filter({ module: scanModule, arg: 7 });
    const want = [...map.entries()].filter(([k, v]) => v.age === 7 && k.endsWith('7'));
    expect(new Map(hits)).toEqual(new Map(want));
    const got = await map.getMany(['u1', 'nope', 'u19999']);
    expect(got).toEqual([{ age: 1, name: 'n1' }, undefined, { age: 19999 % 90, name: 'n19999' }]);
    await expect(map.scan({ module: scanModule, name: 'missing' })).rejects.toMatchObject({
      code: OffHeapErrorCodes.INVALID_ARGUMENT,
    });
    // No module, or partitions that are no count: a typed error before any worker runs, not Node's TypeError.
    for (const bad of [{}, { module: 7 }, null, { module: scanModule, name: 3 }]) {
      await expect(map.scan(bad as unknown as WorkerFunction)).rejects.toMatchObject({
        code: OffHeapErrorCodes.INVALID_ARGUMENT,
      });
    }
    for (const partitions of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      await expect(map.filter({ module: scanModule }, partitions)).rejects.toMatchObject({
        code: OffHeapErrorCodes.INVALID_ARGUMENT,
      });
    }
  });
});
