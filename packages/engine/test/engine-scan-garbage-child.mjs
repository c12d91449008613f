// Child process of engine-scan-garbage.test.ts, run with a semi-space large enough that no scavenge happens during
// a measured pass (--min-semi-space-size, --expose-gc): then the growth of the young generation over a pass is what
// the pass allocated. Scans 20,000 entries with nextvInto in pages of 1,000, from tables and from the memtable, forward,
// reverse and bounded, and prints {case: bytes allocated per 1,000 entries (median of 5)} as JSON, taken as the
// difference between a pass of 20,000 entries and one of 2,000, so that what an iterator costs once cancels out.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { Engine } from '@heapless/engine';

/** Bytes in use in the young generation, where short-lived objects (views, copies) are allocated. */
const newSpaceUsed = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_used_size;

const N = 20_000;
const results = {};
const value = new Uint8Array(100).fill(7);
const buf = new Uint8Array(1000 * (8 + 15 + 100));
for (const where of ['tables', 'memtable']) {
  const dir = mkdtempSync(join(tmpdir(), 'heapless-garbage-'));
  const db = await Engine.open(dir, { writeBufferSize: where === 'memtable' ? 64 << 20 : 1 << 20 });
  for (let i = 0; i < N; i += 1000) {
    const b = db.batch();
    for (let j = i; j < i + 1000; j++) b.put(`key${String(j).padStart(12, '0')}`, value);
    await b.write();
  }
  if (where === 'tables') await db.compactRange();
  for (const [name, options] of [
    ['forward', {}],
    ['reverse', { reverse: true }],
    ['bounded', { gte: 'key', lt: 'kez' }],
  ]) {
    const pass = (n) => {
      const it = db.iterator({ ...options, limit: n });
      let entries = 0;
      for (let end; (end = it.nextvInto(buf, 0, 1000)) > 0; ) {
        for (let p = 0; p < end; entries++) p += 8 + (buf[p] | (buf[p + 1] << 8)) + (buf[p + 4] | (buf[p + 5] << 8));
      }
      it.closeSync();
      if (entries !== n) throw new Error(`scanned ${entries} entries, not ${n}`);
    };
    const allocated = (n) => {
      globalThis.gc();
      const before = newSpaceUsed();
      pass(n);
      return newSpaceUsed() - before;
    };
    for (let w = 0; w < 3; w++) pass(N); // compiled, blocks cached
    // What a pass of N entries allocates beyond a pass of SHORT: the per-entry part, without what an iterator costs
    // once (its cursors, compiled code).
    const SHORT = 2000;
    const samples = [];
    for (let r = 0; r < 5; r++) samples.push(((allocated(N) - allocated(SHORT)) / (N - SHORT)) * 1000);
    samples.sort((a, b) => a - b);
    results[`${where} ${name}`] = Math.round(samples[2]);
  }
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify(results)}\n`);
