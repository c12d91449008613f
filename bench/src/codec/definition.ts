/**
 * `codec`: seed 003's encoding table — encode and decode ops/s and bytes per record of a price update with its
 * embedded instrument (~70 bytes), for a struct layout, msgpackr with record structures, msgpackr plain, JSON and
 * `v8.serialize`; and its "real world" figure, messages encoded by a sender and decoded by a receiver on another
 * thread over a loopback WebSocket and a loopback TCP connection, where the rate is min(encode, decode) and the
 * transport's own cost. Light module: the parent reads it; the codecs load in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const codec: BenchmarkDefinition = {
  name: 'codec',
  description:
    "seed 003's encoding table: encode/decode ops/s and bytes of a ~70-byte price update (struct, msgpackr records, msgpackr, JSON, v8.serialize), and messages/s sent and decoded over loopback WebSocket and TCP",
  systems: ['json', 'struct', 'msgpackr-records', 'msgpackr', 'v8'],
  baseline: 'json',
  phases: ['encode', 'decode', 'websocket', 'tcp'],
  defaultRecords: 1_000_000,
  loadWorkload: async () => (await import('./workload.js')).codecWorkload,
};
