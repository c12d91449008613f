/**
 * `gc-pressure`: what holding N users costs the JS heap and the garbage collector, per system.
 * Light module: the parent reads it; the workload and the stores load in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';
import { GC_PHASES } from './phases.js';

export const gcPressure: BenchmarkDefinition = {
  name: 'gc-pressure',
  description: 'seed 003: N users in a Map, a Map of msgpack, lmdb, OffHeapMap — heap, RSS, GC pauses, ops/s',
  systems: ['map-object', 'map-msgpack', 'lmdb', 'offheap-msgpack', 'offheap-struct'],
  baseline: 'map-object',
  phases: GC_PHASES,
  defaultRecords: 5_000_000,
  // --expose-gc for forced full collections; a heap limit that holds 5M objects (the default ~4 GiB may not).
  execArgv: ['--expose-gc', '--max-old-space-size=12288'],
  loadWorkload: async () => (await import('./workload.js')).gcPressureWorkload,
};
