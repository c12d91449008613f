/**
 * `replica`: the floors of a follower's start, on a nats-server this benchmark starts itself
 * (JetStream, file storage, loopback). `consume`: N change messages of ~500 bytes read from the stream with an empty
 * handler, msgs/s. `download`: a checkpoint of N × 500 bytes fetched from the JetStream object store, MB/s.
 * Systems: `replica` (@heapless/replica: the ordered reader, which also decodes and checks every message; the
 * checkpoint download, which also checks sizes and SHA-256, writes, fsyncs and renames) and `nats-js` (the
 * baseline: nats.js's own ordered consumer counting messages, and its object store read into nothing), and
 * `follower` (phases `start` and `write`: a Follower's start three ways beside its floors, and `heapless serve
 * --follow` write latency beside a local server's; see follower-start.ts and write-latency.ts). Light
 * module: the parent reads it; NATS loads in the child.
 */
import type { BenchmarkDefinition } from '../harness/benchmark.js';

export const replica: BenchmarkDefinition = {
  name: 'replica',
  description:
    'issue 16 / seed 004: consuming N ~500-byte change messages from JetStream (empty handler) and downloading an N × 500-byte checkpoint from the object store — @heapless/replica vs raw nats.js; a follower started by full replay, from a checkpoint + the last 1%, restarted with local data, against those floors; write latency through the log vs local',
  systems: ['replica', 'nats-js', 'follower'],
  baseline: 'nats-js',
  phases: ['consume', 'download', 'start', 'write'],
  defaultRecords: 100_000,
  loadWorkload: async () => (await import('./workload.js')).replicaWorkload,
};
