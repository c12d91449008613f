/**
 * `startup`: how long a restarted service takes to hold its N records again, from local disk.
 * Systems: `offheap-map` (heapless, loading its map image), `offheap-scan` (heapless with `image: false`: the map
 * rebuilt by one scan of the engine), `offheap-crash` (heapless after kill -9 of a running map: its periodic image
 * plus the WAL after it), `offheap-checkpoint` (a live checkpoint's time and writer pause, then the copy's open),
 * `map-rebuild` (a plain Map rebuilt from the same engine directory), `lmdb`
 * (open + first get, and a full read), `fs-read` (the physical floor, and the baseline: every ratio reads "times
 * the floor"). Light module: the parent reads it; the stores load in the child and its probe processes.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const startup: BenchmarkDefinition = {
  name: 'startup',
  description:
    'seed 004: restart from local disk — OffHeapMap open + load + first get (map image, or a scan of the engine) vs a Map rebuilt from the engine, lmdb, and reading the engine files (floor)',
  systems: ['offheap-map', 'offheap-scan', 'offheap-crash', 'offheap-checkpoint', 'map-rebuild', 'lmdb', 'fs-read'],
  baseline: 'fs-read',
  phases: ['start'],
  defaultRecords: 5_000_000,
  loadWorkload: async () => (await import('./workload.js')).startupWorkload,
};
