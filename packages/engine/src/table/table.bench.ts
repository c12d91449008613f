/**
 * SSTable read-path benchmark on a 1M-entry table (16-byte user keys, 100-byte values, LevelDB's db_bench shape).
 * Each bench call does OPS operations, so ns/op = the reported mean (ms) * 1e6 / OPS.
 *
 *   npx vitest bench --run packages/engine/src/table/table.bench.ts
 *
 * Not part of the test suite (vitest runs *.bench.ts only under `vitest bench`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { MAX_SEQUENCE, makeInternalKey, ValueKind } from '../base/internal-key.js';
import { BlockCache } from './block-cache.js';
import { TableBuilder } from './table-builder.js';
import { TableReader } from './table-reader.js';

const N = Number(process.env.TABLE_BENCH_ENTRIES ?? 1_000_000);
const OPS = 1000;
const dir = mkdtempSync(join(tmpdir(), 'heapless-table-bench-'));
const path = join(dir, '000001.sst');

function userKey(i: number, out: Uint8Array): Uint8Array {
  // "k" + 15 decimal digits: 16 bytes, sorted like i.
  out[0] = 107;
  for (let p = 15; p >= 1; p--) {
    out[p] = 48 + (i % 10);
    i = Math.floor(i / 10);
  }
  return out;
}

const scratch = new Uint8Array(16);
const value = new Uint8Array(100).map((_, i) => i);
const t0 = performance.now();
const builder = new TableBuilder(path);
for (let i = 0; i < N; i++) builder.add(makeInternalKey(userKey(i * 2, scratch), i + 1, ValueKind.Value), value);
const meta = builder.finish();
const buildMs = performance.now() - t0;
console.log(
  `built ${N} entries, ${(meta.fileSize / 1e6).toFixed(1)} MB in ${buildMs.toFixed(0)} ms (${((buildMs * 1e6) / N).toFixed(0)} ns/entry)`,
);

const bigCache = new BlockCache({ capacity: 512 * 1024 * 1024 });
const hot = TableReader.open(path, { fileNumber: 1, cache: bigCache });
const small = TableReader.open(path, { fileNumber: 2, cache: new BlockCache() });
// Warm the big cache with every block.
{
  const it = hot.iterator();
  for (it.seekToFirst(); it.valid(); it.next()) {}
  it.close();
}

let seed = 12345;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % N;
const probe = new Uint8Array(16);
let sink = 0;
afterAll(() => {
  // Keeps the results observable, so the optimizer cannot drop the reads.
  if (sink === -1) console.log(sink);
  hot.close();
  small.close();
  rmSync(dir, { recursive: true, force: true });
});

describe(`table of ${N} entries, ${OPS} ops per call`, () => {
  bench('get hit, every block cached', () => {
    for (let j = 0; j < OPS; j++) {
      const v = hot.get(userKey(rand() * 2, probe), MAX_SEQUENCE);
      if (v instanceof Uint8Array) sink += v.length;
    }
  });
  bench('get hit, 8 MiB block cache (mostly pread)', () => {
    for (let j = 0; j < OPS; j++) {
      const v = small.get(userKey(rand() * 2, probe), MAX_SEQUENCE);
      if (v instanceof Uint8Array) sink += v.length;
    }
  });
  bench('get miss (absent key, bloom filter)', () => {
    for (let j = 0; j < OPS; j++) if (hot.get(userKey(rand() * 2 + 1, probe), MAX_SEQUENCE) !== undefined) sink++;
  });
  bench('iterator seek, cached', () => {
    const it = hot.iterator();
    for (let j = 0; j < OPS; j++) {
      it.seek(makeInternalKey(userKey(rand() * 2, probe), MAX_SEQUENCE, ValueKind.Value));
      sink += it.value().length;
    }
    it.close();
  });
  bench(
    `full scan forward (${N} entries per call)`,
    () => {
      const it = hot.iterator();
      for (it.seekToFirst(); it.valid(); it.next()) sink += it.key().length + it.value().length;
      it.close();
    },
    { iterations: 5, time: 0 },
  );
  bench(
    `full scan backward (${N} entries per call)`,
    () => {
      const it = hot.iterator();
      for (it.seekToLast(); it.valid(); it.prev()) sink += it.key().length;
      it.close();
    },
    { iterations: 3, time: 0 },
  );
});
