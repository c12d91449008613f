/**
 * Quick measurement, not a test: set / decoded get / one-field read of OffHeapMap (msgpack and struct) against a
 * Map<string, object>, same keys and records, same run, reported as ops/s and ratios to the Map.
 *
 *   npx tsc -p packages/offheap/tsconfig.bench.json && node --expose-gc packages/offheap/dist/bench/map/offheap-map.bench.js [N]
 *
 * With --expose-gc it also reports heap used after each load and the time of a forced full GC then.
 *
 * The full comparison (5M users, GC pauses, lmdb) is `pnpm bench gc-pressure`.
 */

import { array, struct, utf8 } from '../struct.js';
import { OffHeapMap } from './offheap-map.js';

const N = Number(process.argv[2] ?? 1_000_000);
const User = struct({ id: 'u32', name: utf8(24), email: utf8(40), age: 'u8', friends: array('u32', 3) });
interface UserRecord {
  id: number;
  name: string;
  email: string;
  age: number;
  friends: number[];
}
const keys: string[] = [];
for (let i = 0; i < N; i++) keys.push(`user:${i}`);
/** Records are made as they are stored (both sides pay for it), so a map's heap figure is what it holds. */
const user = (i: number): UserRecord => ({
  id: i,
  name: `name ${i}`,
  email: `user${i}@example.com`,
  age: i % 100,
  friends: [i + 1, i + 2, i + 3],
});
// Reads in a shuffled order so neither side benefits from insertion-order locality.
const order = new Uint32Array(N);
for (let i = 0; i < N; i++) order[i] = i;
for (let i = N - 1; i > 0; i--) {
  const j = Math.floor(Math.random() * (i + 1));
  const t = order[i]!;
  order[i] = order[j]!;
  order[j] = t;
}

function time(fn: () => number): { opsPerSec: number; sink: number } {
  const t0 = performance.now();
  const sink = fn();
  return { opsPerSec: N / ((performance.now() - t0) / 1000), sink };
}

const rows: [string, string, number][] = [];
let maxSetMs = 0;
const gc = (globalThis as { gc?: () => void }).gc;
const heapRows: [string, number, number][] = [];

/** Heap used after a full GC, and the time of a second forced full GC (what a GC of that heap costs). */
function heapProbe(system: string): void {
  if (gc === undefined) return;
  gc();
  const used = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  gc();
  heapRows.push([system, used, performance.now() - t0]);
}

for (let round = 0; round < 2; round++) {
  rows.length = 0;
  heapRows.length = 0;
  heapProbe('baseline (the keys)');
  const map = new Map<string, UserRecord>();
  rows.push([
    'Map',
    'set',
    time(() => {
      for (let i = 0; i < N; i++) map.set(keys[i]!, user(i));
      return map.size;
    }).opsPerSec,
  ]);
  heapProbe('Map<string, object>');
  rows.push([
    'Map',
    'get',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += map.get(keys[order[i]!]!)!.id;
      return s;
    }).opsPerSec,
  ]);
  rows.push([
    'Map',
    'field read',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += map.get(keys[order[i]!]!)!.age;
      return s;
    }).opsPerSec,
  ]);
  // Keys built per lookup, as a server has them (decoded from a request): the Map must hash the new string and
  // compare it by content, as OffHeapMap always does. The rows above reuse the inserted string objects, whose hash
  // V8 caches and which a Map compares by identity.
  rows.push([
    'Map',
    'get (fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += map.get(`user:${order[i]!}`)!.id;
      return s;
    }).opsPerSec,
  ]);
  rows.push([
    'Map',
    'field read (fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += map.get(`user:${order[i]!}`)!.age;
      return s;
    }).opsPerSec,
  ]);
  map.clear();
  // Keys outside ASCII take the other path of the key hasher (encoded into a scratch buffer first).
  rows.push([
    'Map',
    'set (non-ASCII key)',
    time(() => {
      for (let i = 0; i < N; i++) map.set(`usér:${i}`, user(i));
      return map.size;
    }).opsPerSec,
  ]);
  rows.push([
    'Map',
    'get (non-ASCII fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += map.get(`usér:${order[i]!}`)!.id;
      return s;
    }).opsPerSec,
  ]);
  map.clear();

  const um = new OffHeapMap<string, UserRecord>();
  rows.push([
    'OffHeapMap msgpack',
    'set (non-ASCII key)',
    time(() => {
      for (let i = 0; i < N; i++) um.set(`usér:${i}`, user(i));
      return um.size;
    }).opsPerSec,
  ]);
  rows.push([
    'OffHeapMap msgpack',
    'get (decoded, non-ASCII fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += um.get(`usér:${order[i]!}`)!.id;
      return s;
    }).opsPerSec,
  ]);
  await um.close();

  const om = new OffHeapMap<string, UserRecord>();
  rows.push([
    'OffHeapMap msgpack',
    'set',
    time(() => {
      for (let i = 0; i < N; i++) om.set(keys[i]!, user(i));
      return om.size;
    }).opsPerSec,
  ]);
  heapProbe('OffHeapMap msgpack');
  rows.push([
    'OffHeapMap msgpack',
    'get (decoded)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += om.get(keys[order[i]!]!)!.id;
      return s;
    }).opsPerSec,
  ]);
  rows.push([
    'OffHeapMap msgpack',
    'get (decoded, fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += om.get(`user:${order[i]!}`)!.id;
      return s;
    }).opsPerSec,
  ]);
  await om.close();

  const sm = new OffHeapMap<string, UserRecord, typeof User.fields>({ struct: User });
  rows.push([
    'OffHeapMap struct',
    'set',
    time(() => {
      for (let i = 0; i < N; i++) sm.set(keys[i]!, user(i));
      return sm.size;
    }).opsPerSec,
  ]);
  const v = sm.view();
  rows.push([
    'OffHeapMap struct',
    'field read (view)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) {
        sm.locate(keys[order[i]!]!, v);
        s += v.age;
      }
      return s;
    }).opsPerSec,
  ]);
  rows.push([
    'OffHeapMap struct',
    'field read (view, fresh key)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) {
        sm.locate(`user:${order[i]!}`, v);
        s += v.age;
      }
      return s;
    }).opsPerSec,
  ]);
  rows.push([
    'OffHeapMap struct',
    'get (decoded)',
    time(() => {
      let s = 0;
      for (let i = 0; i < N; i++) s += sm.get(keys[order[i]!]!)!.id;
      return s;
    }).opsPerSec,
  ]);
  await sm.close();

  // Longest single set during a load (growth is incremental, so no set should pay for a whole rehash).
  const lm = new OffHeapMap<string, UserRecord>();
  maxSetMs = 0;
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    lm.set(keys[i]!, user(i));
    const dt = performance.now() - t0;
    if (dt > maxSetMs) maxSetMs = dt;
  }
  await lm.close();
}

const base: Record<string, number> = {};
for (const [sys, op, v] of rows) if (sys === 'Map') base[op] = v;
/** The Map row each OffHeapMap row is compared with. */
const BASE_OF: Record<string, string> = {
  'get (decoded)': 'get',
  'field read (view)': 'field read',
  'get (decoded, fresh key)': 'get (fresh key)',
  'field read (view, fresh key)': 'field read (fresh key)',
  'get (decoded, non-ASCII fresh key)': 'get (non-ASCII fresh key)',
};
const baseFor = (op: string): number => base[op] ?? base[BASE_OF[op]!]!;
console.log(`N=${N} (second of two rounds)`);
console.log('system               op                                   ops/s        x Map');
for (const [sys, op, v] of rows) {
  console.log(
    `${sys.padEnd(20)} ${op.padEnd(36)} ${Math.round(v).toLocaleString('en').padStart(12)}  ${(v / baseFor(op)).toFixed(2)}`,
  );
}
if (heapRows.length > 0) {
  console.log('heap used after load (the keys stay alive in every row):');
  for (const [sys, used, ms] of heapRows) {
    console.log(`  ${sys.padEnd(34)} ${(used / 1e6).toFixed(1).padStart(8)} MB   forced full GC ${ms.toFixed(1)} ms`);
  }
}
console.log(`longest single OffHeapMap.set during a ${N}-record load: ${maxSetMs.toFixed(2)} ms`);
