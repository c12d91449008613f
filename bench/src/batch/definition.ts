/**
 * `batch`: writes of 1,000 records as one atomic batch against the same 1,000 written one by one, through
 * a persisted OffHeapMap in this process and through `heapless serve` over one WebSocket. Light module: the parent
 * reads it; the map, the client and the server load in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const batch: BenchmarkDefinition = {
  name: 'batch',
  description:
    'issue 15: 1,000 writes as one atomic batch (map.batch(), KV batch) vs the same writes one by one, interleaved in one process, through the map and through heapless serve',
  systems: ['heapless'],
  baseline: 'heapless',
  phases: ['map', 'server'],
  defaultRecords: 100_000,
  loadWorkload: async () => (await import('./workload.js')).batchWorkload,
};
