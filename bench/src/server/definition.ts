/**
 * `server`: heapless serve over the network against what a user would run instead. Light module:
 * the parent reads it; the clients and servers load in the child. Phases: `kv` (get/set at depths 1, 16, 1000),
 * `http` (GET /v1/kv/:key with autocannon), `scan` (heapless only: ordered pages, and gets beside a full scan). See
 * bench/README.md for the cases and anchors.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const server: BenchmarkDefinition = {
  name: 'server',
  description:
    'issue 6 / seed 003: heapless serve (typed client over one WebSocket, and over raw TCP; HTTP) vs redis-server via ioredis and a bare fastify route (anchor), and redis-benchmark',
  systems: ['heapless', 'heapless-tcp', 'heapless-none', 'anchor', 'redis-benchmark'],
  baseline: 'anchor',
  phases: ['kv', 'http', 'scan'],
  defaultRecords: 1_000_000,
  loadWorkload: async () => (await import('./workload.js')).serverWorkload,
};
