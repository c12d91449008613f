/**
 * Block codecs side by side, on the same entries in the same run: bytes on disk, build time (the compression the
 * flush and compaction workers pay), point gets that miss the block cache (a pread and one decompression per get)
 * and a full scan without the cache (every block decompressed once). Two data sets: seed 000's `key<i>` / `value<i>`
 * (LevelDB's tutorial, what `seed-leveldb` writes) and JSON documents of 100-400 bytes made of a small vocabulary and
 * numbers (what an application stores).
 *
 *   npx vitest bench --run packages/engine/src/table/compression.bench.ts
 *
 * zstd is measured only on a Node whose node:zlib has it (>= 22.15). COMPRESSION_BENCH_ENTRIES sets the entries per
 * table (default 200,000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, bench, describe } from 'vitest';
import { MAX_SEQUENCE, makeInternalKey, ValueKind } from '../base/internal-key.js';
import type { Compression } from '../base/options.js';
import { TableBuilder } from './table-builder.js';
import { TableReader } from './table-reader.js';

const N = Number(process.env.COMPRESSION_BENCH_ENTRIES ?? 200_000);
const OPS = 1000;
const codecs: Compression[] = ['none', 'snappy', 'lz4', 'deflate'];
if (typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function') codecs.push('zstd');

const dir = mkdtempSync(join(tmpdir(), 'heapless-codec-bench-'));
const enc = new TextEncoder();
const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'status', 'active', 'user', 'order', 'total', 'item'];

/** The i-th entry of each data set; keys sort like i. */
const dataSets: Record<string, (i: number) => [string, string]> = {
  'seed 000 (key<i> = value<i>)': (i) => [`key${String(i).padStart(9, '0')}`, `value${i}`],
  'JSON documents': (i) => {
    let x = (i + 1) * 2654435761;
    const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
    const text = Array.from({ length: 10 + (next() % 40) }, () => words[next() % words.length]).join(' ');
    const doc = { id: i, created_at: 1_700_000_000_000 + i * 1000, score: next() % 100_000, text };
    return [`doc${String(i).padStart(9, '0')}`, JSON.stringify(doc)];
  },
};

let sink = 0;
const readers: TableReader[] = [];
afterAll(() => {
  if (sink === -1) console.log(sink);
  for (const r of readers) r.close();
  rmSync(dir, { recursive: true, force: true });
});

let fileNumber = 0;
for (const [setName, entry] of Object.entries(dataSets)) {
  const rows: string[] = [];
  const tables = new Map<Compression, TableReader>();
  let plainBytes = 0;
  for (const codec of codecs) {
    const path = join(dir, `${++fileNumber}.sst`);
    const t0 = performance.now();
    const builder = new TableBuilder(path, { compression: codec });
    for (let i = 0; i < N; i++) {
      const [k, v] = entry(i);
      builder.add(makeInternalKey(enc.encode(k), i + 1, ValueKind.Value), enc.encode(v));
    }
    const { fileSize } = builder.finish();
    const ms = performance.now() - t0;
    if (codec === 'none') plainBytes = fileSize;
    rows.push(
      `  ${codec.padEnd(8)} ${(fileSize / 2 ** 20).toFixed(2).padStart(8)} MiB  ×${(fileSize / plainBytes).toFixed(3)}` +
        `  build ${((ms * 1e6) / N).toFixed(0).padStart(5)} ns/entry`,
    );
    // No block cache: every get reads and decodes its block.
    const r = TableReader.open(path, { fileNumber });
    readers.push(r);
    tables.set(codec, r);
  }
  console.log(`${setName}, ${N} entries:\n${rows.join('\n')}`);

  let seed = 12345;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % N;
  const keys = Array.from({ length: 4096 }, () => enc.encode(entry(rand())[0]));
  describe(`${setName}: get, no block cache (${OPS} per call)`, () => {
    for (const [codec, r] of tables) {
      bench(codec, () => {
        for (let j = 0; j < OPS; j++) {
          const v = r.get(keys[(j * 7 + sink) & 4095]!, MAX_SEQUENCE);
          if (v instanceof Uint8Array) sink += v.length & 1;
        }
      });
    }
  });
  describe(`${setName}: full scan, no block cache (${N} entries per call)`, () => {
    for (const [codec, r] of tables) {
      bench(
        codec,
        () => {
          const it = r.iterator({ fillCache: false });
          for (it.seekToFirst(); it.valid(); it.next()) sink += it.value().length & 1;
          it.close();
        },
        { iterations: 5, time: 0 },
      );
    }
  });
}
