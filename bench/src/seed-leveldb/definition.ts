/**
 * `seed-leveldb`: the workload of seed 000 (the LevelDB tutorial), keys `key<i>` and values `value<i>`, run on every
 * store we compare with. Light module: the parent reads it; the workload and the stores load in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';
import { SEED_PHASES } from './phases.js';
import { SEED_SYSTEMS } from './system-names.js';

export const seedLeveldb: BenchmarkDefinition = {
  name: 'seed-leveldb',
  description: 'seed 000: awaited puts, verified/random/missing gets, deletes, batches, fsync puts, full scan',
  systems: SEED_SYSTEMS,
  baseline: 'classic-level',
  phases: SEED_PHASES,
  defaultRecords: 1_000_000,
  loadWorkload: async () => (await import('./workload.js')).seedWorkload,
};
