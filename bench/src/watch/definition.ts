/**
 * `watch`: a writer of pipelined `set`s through `heapless serve` while 0, 1 and 100 watchers (each its own WebSocket,
 * in a process of their own) watch every key: the changes/s delivered, and the writer's throughput with
 * watchers against without (goal: at least 0.8×). Light module: the parent reads it.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const watch: BenchmarkDefinition = {
  name: 'watch',
  description:
    'issue 15: heapless serve with a writer of pipelined sets and 0 / 1 / 100 watchers of every key, interleaved in one run: changes/s delivered, writer ops/s with ÷ without watchers',
  systems: ['heapless'],
  baseline: 'heapless',
  phases: ['watch'],
  defaultRecords: 100_000,
  loadWorkload: async () => (await import('./workload.js')).watchWorkload,
};
