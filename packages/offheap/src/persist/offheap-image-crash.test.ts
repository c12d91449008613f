import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../index.js';
import { runUntilKilled } from '../test-support/kill-child.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'offheap-image-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Value = { i: number; pad: string };

/** A 32-bit mix of two integers, so that operation i is computed on its own, without the ones before it. */
function mix(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Operation i of a seed: a set (a value of random size, some large) or a delete (value undefined), over 400 keys. */
function op(seed: number, i: number): { key: string; value: Value | undefined } {
  const h = mix(seed, i);
  const key = `k${h % 400}`;
  if ((h >>> 9) % 6 === 0) return { key, value: undefined };
  const size = (h >>> 12) % 13 === 0 ? 2000 + ((h >>> 3) % 9000) : (h >>> 4) % 300;
  return { key, value: { i, pad: 'p'.repeat(size) } };
}

/**
 * The child opens the map with frequent periodic images (every 24 KiB written) and small memtables (WALs rotate,
 * flush and are retained), applies operations start, start+1, ... until killed, and every 8 operations awaits
 * durable() and prints "ack <i>": operations up to i are in the WAL (kill -9 safe). The same `op` runs in both.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
${mix.toString()}
${op.toString()}
const [dir, seedText, startText] = process.argv.slice(2);
const seed = Number(seedText);
const map = await OffHeapMap.open({
  dir,
  imageEvery: { bytes: 24 * 1024, seconds: 0 },
  engine: { writeBufferSize: 64 * 1024, targetFileSize: 32 * 1024, level0CompactionTrigger: 2 },
});
process.stdout.write('opened ' + map.openStats.source + '\\n');
for (let i = Number(startText); ; i++) {
  const o = op(seed, i);
  if (o.value === undefined) map.delete(o.key);
  else map.set(o.key, o.value);
  if (i % 8 === 7) {
    await map.durable();
    process.stdout.write('ack ' + i + '\\n');
    // A turn of the event loop now and then: an image's fsync and rename complete on it.
    if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
  }
}
`;
const childFile = join(root, 'child.mjs');
writeFileSync(childFile, CHILD);

/** What one child run did before its SIGKILL: its open's source, and the last operation it saw acknowledged. */
interface Run {
  opened: string;
  acked: number;
}

/** Runs the child from operation `start`, SIGKILLs it after `acks` acknowledgements (or at once, `acks` = 0). */
async function runAndKill(dir: string, seed: number, start: number, acks: number): Promise<Run> {
  const run: Run = { opened: '', acked: start - 1 };
  let seen = 0;
  await runUntilKilled(childFile, [dir, String(seed), String(start)], (line) => {
    const [what, arg] = line.split(' ');
    if (what === 'opened') {
      run.opened = arg!;
      return acks === 0;
    }
    if (what !== 'ack') return false;
    run.acked = Number(arg);
    return ++seen === acks;
  });
  return run;
}

/** The model: the state after operations [0, applied], applied one at a time. */
class Model {
  readonly state = new Map<string, Value>();
  applied = -1;
  constructor(private readonly seed: number) {}
  advanceTo(i: number): void {
    while (this.applied < i) {
      const o = op(this.seed, ++this.applied);
      if (o.value === undefined) this.state.delete(o.key);
      else this.state.set(o.key, o.value);
    }
  }
  equals(map: OffHeapMap<string, Value>): boolean {
    if (map.size !== this.state.size) return false;
    for (const [k, v] of this.state) {
      const got = map.get(k);
      if (got === undefined || got.i !== v.i || got.pad !== v.pad) return false;
    }
    return true;
  }
}

/** A deterministic stream of small integers for the kill points. */
function kills(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s >>> 16;
  };
}

describe('a persisted OffHeapMap with periodic images, killed with SIGKILL at random points', () => {
  it('reopens from its newest image plus the WAL after it, equal to the acknowledged prefix, never by a scan', async () => {
    const seed = 15;
    const dir = join(root, 'cycles');
    const model = new Model(seed);
    const next = kills(seed);
    let replayedTotal = 0;
    let midImage = 0;
    const CYCLES = 16;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // Most kills land after some writes, some right after the open; images run all the time (every ~24 KiB).
      const r = next();
      const acks = r % 7 === 0 ? 0 : 1 + (r % 50);
      const run = await runAndKill(dir, seed, model.applied + 1, acks);
      if (cycle > 0) expect(run.opened).toBe('image'); // the previous check closed the map cleanly
      if (existsSync(join(dir, 'MAPIMAGE.tmp'))) midImage++;
      const map = await OffHeapMap.open<string, Value>({ dir, imageEvery: false });
      try {
        // Acknowledged operations are all there; the ones in flight at the kill (at most 8 after the last ack) may
        // be: the state is the model after some operation from the last acknowledged one on.
        if (cycle > 0 || existsSync(join(dir, 'MAPIMAGE'))) {
          expect(map.openStats.source, String(map.openStats.imageRejected)).toBe('image');
        }
        replayedTotal += map.openStats.replayed;
        model.advanceTo(run.acked);
        let found = model.equals(map);
        for (let extra = 0; !found && extra < 8; extra++) {
          model.advanceTo(model.applied + 1);
          found = model.equals(map);
        }
        expect(found, `cycle ${cycle}: the map is no prefix of the operations from ${run.acked} on`).toBe(true);
      } finally {
        await map.close();
      }
    }
    // The opens replayed WAL writes onto images, and some kills fell while an image was being written.
    expect(replayedTotal).toBeGreaterThan(0);
    expect(midImage).toBeGreaterThan(0);
  }, 120_000);
});
