/**
 * `seed-open-read`: the measurement of seed 002 (LMDB vs RocksDB vs Speedb read latency). N JSON documents of random
 * printable text (0–2000 characters) plus `created_at`, under 4-byte big-endian integer keys; then, 1,000 times, open
 * the store, read one document, close it. Baseline: **lmdb**, whose 0.31 ms mean the seed reports. Light module:
 * the parent reads it; the documents and the stores load in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';
import { OPEN_READ_SYSTEMS } from './system-names.js';

export const seedOpenRead: BenchmarkDefinition = {
  name: 'seed-open-read',
  description: 'seed 002: load JSON documents under 4-byte keys, then open + one get + close, 1,000 times',
  systems: OPEN_READ_SYSTEMS,
  baseline: 'lmdb',
  phases: ['load', 'open-get-close'],
  // The seed's 1M documents are ~1 GiB per system; 200,000 (its figures' shape at a fifth of the size) fits a CI
  // machine's disk and minutes. `--records 1000000` is the seed's own size.
  defaultRecords: 200_000,
  loadWorkload: async () => (await import('./workload.js')).openReadWorkload,
};
