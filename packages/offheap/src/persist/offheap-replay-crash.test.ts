import { cpSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeStatus, OffHeapMap } from '../index.js';
import { runUntilKilled } from '../test-support/kill-child.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'offheap-replay-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `shape` only in the values of new keys: a shape the image's msgpackr structures do not hold yet. */
type Value = { i: number; pad: string; shape?: number };

/** Records written before the image: enough arena that the replay's few pages are a small part of it. */
const RECORDS = 40_000;
/** Writes after the image in each cycle: over the 256 above which a replay makes its pages private in bulk. */
const SUFFIX = 700;
/** The suffix's writes go to this many keys (plus a few new ones): they touch few pages of the image. */
const HOT = 40;

/**
 * Operation j of cycle c's suffix: mostly rewrites of a hot key at the same size (in place), some at another size
 * (another block), some deletes, and some new keys whose values have a shape first seen after the image (msgpackr
 * adds a structure: the suffix stores the map's structures anew).
 */
function op(c: number, j: number): { key: string; value: Value | undefined } {
  const n = c * 100_000 + j;
  if (j % 50 === 49) return { key: `new-${c}-${j}`, value: { i: n, pad: 'n', shape: c } };
  const key = `k${(j * 7) % HOT}`;
  if (j % 23 === 22) return { key, value: undefined };
  return { key, value: { i: n, pad: 'p'.repeat(j % 17 === 16 ? 900 : 200) } };
}

function initial(i: number): Value {
  return { i, pad: 'p'.repeat(200) };
}

/**
 * `fill`: writes RECORDS records, an image of them, then cycle 0's suffix; `more`: opens what a crash left (the
 * image plus the WAL after it, replayed), then writes cycle `c`'s suffix. Either prints "ready" once its writes are
 * in the WAL (kill -9 safe) and waits to be killed.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
${op.toString()}
${initial.toString()}
const HOT = ${HOT};
const [dir, phase, cycleText] = process.argv.slice(2);
const c = Number(cycleText);
const map = await OffHeapMap.open({ dir, imageEvery: false });
if (phase === 'fill') {
  for (let i = 0; i < ${RECORDS}; i++) map.set('k' + i, initial(i));
  await map.durable();
  if (!(await map.writeImage())) throw new Error('no image');
} else if (map.openStats.source !== 'image' || map.openStats.replayed === 0) {
  throw new Error('opened by ' + map.openStats.source + ', ' + map.openStats.replayed + ' replayed');
}
for (let j = 0; j < ${SUFFIX}; j++) {
  const o = op(c, j);
  if (o.value === undefined) map.delete(o.key);
  else map.set(o.key, o.value);
}
await map.durable();
process.stdout.write('ready\\n');
setInterval(() => {}, 60_000);
`;
const childFile = join(root, 'child.mjs');
writeFileSync(childFile, CHILD);

function run(dir: string, phase: 'fill' | 'more', cycle: number): Promise<void> {
  return runUntilKilled(childFile, [dir, phase, String(cycle)], (line) => line === 'ready');
}

/** The state after the fill and the suffixes of cycles [0, cycles). */
function model(cycles: number): Map<string, Value> {
  const m = new Map<string, Value>();
  for (let i = 0; i < RECORDS; i++) m.set(`k${i}`, initial(i));
  for (let c = 0; c < cycles; c++) {
    for (let j = 0; j < SUFFIX; j++) {
      const o = op(c, j);
      if (o.value === undefined) m.delete(o.key);
      else m.set(o.key, o.value);
    }
  }
  return m;
}

/** Reads every key of `want` (before anything that sees the whole map), then checks the size. */
function expectEqual(map: OffHeapMap<string, Value>, want: Map<string, Value>): void {
  for (const [k, v] of want) {
    const got = map.get(k);
    if (got?.i !== v.i || got.pad !== v.pad || got.shape !== v.shape) expect(got, k).toEqual(v);
  }
  expect(map.size).toBe(want.size);
}

/**
 * Opens a copy of `dir` (so that its close, which writes a clean image, leaves `dir` as the crash left it). The open
 * returns with the replayed writes still owed to the map's memory: `via` 'background' waits until they are all in,
 * 'reads' reads every key at once (each key's writes go in before its read).
 */
async function checkCopy(
  dir: string,
  want: Map<string, Value>,
  replayed: number,
  via: 'background' | 'reads',
): Promise<void> {
  const copy = `${dir}-copy-${replayed}`;
  cpSync(dir, copy, { recursive: true });
  const map = await OffHeapMap.open<string, Value>({ dir: copy, imageEvery: false });
  try {
    expect(map.openStats.source, String(map.openStats.imageRejected)).toBe('image');
    expect(map.openStats).toMatchObject({ replayed, replayPending: replayed });
    if (via === 'background') {
      while (map.openStats.replayPending > 0) await new Promise((r) => setImmediate(r));
      const imagePages = Math.ceil(statSync(join(copy, 'MAPIMAGE')).size / 4096);
      const { replayPages } = map.openStats;
      if (nativeStatus.imageLoader === 'mapped' && process.platform === 'linux') {
        // Only the pages the replay writes were made private: the index table's and the hot keys' records.
        expect(replayPages).toBeGreaterThan(0);
        expect(replayPages).toBeLessThan(imagePages / 4);
      } else {
        expect(replayPages).toBe(0);
      }
    }
    expectEqual(map, want);
    expect(map.openStats.replayPending).toBe(0);
  } finally {
    await map.close();
  }
}

describe('an OffHeapMap killed with SIGKILL after many writes to few keys since its image', () => {
  it('reopens equal to the model by replaying onto the image, and so again after writes made since that open', async () => {
    const dir = join(root, 'map');
    await run(dir, 'fill', 0);
    // The image plus cycle 0's suffix (the image's tag is not a data write).
    await checkCopy(dir, model(1), SUFFIX, 'background');
    // The child opens what the crash left (replaying cycle 0's writes), writes cycle 1's and is killed again: no
    // image was written since, so the next open replays both suffixes onto the same image.
    await run(dir, 'more', 1);
    await checkCopy(dir, model(2), 2 * SUFFIX, 'reads');
    // A clean open and close of the crashed directory itself: the map holds the same, and reopens from its image.
    const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    expectEqual(map, model(2));
    map.set('after', { i: -1, pad: '' });
    await map.close();
    const again = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
    try {
      expect(again.openStats).toMatchObject({ source: 'image', replayed: 0 });
      const want = model(2);
      want.set('after', { i: -1, pad: '' });
      expectEqual(again, want);
    } finally {
      await again.close();
    }
  }, 120_000);
});
