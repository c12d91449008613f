/**
 * Entry of a probe process: `node --expose-gc probe.js <system> <dir> <records>`, forked by the startup workload
 * so that each measured start happens in a fresh process (no module, JIT or heap state of the run that wrote the
 * data). It imports only its own system's modules, sends one {@link ProbeMessage} and exits.
 */
import process from 'node:process';
import type { Sample } from '../harness/benchmark.js';
import type { ProbeMessage } from './probe-messages.js';

const probes: Readonly<Record<string, (dir: string, records: number) => Promise<Sample[]>>> = {
  'offheap-map': async (dir, records) =>
    (await import('./probes/offheap-map-probe.js')).probeOffHeapMap(dir, records, true),
  'offheap-scan': async (dir, records) =>
    (await import('./probes/offheap-map-probe.js')).probeOffHeapMap(dir, records, false),
  'offheap-crash': async (dir, records) =>
    (await import('./probes/offheap-crash-probe.js')).probeOffHeapCrash(dir, records),
  'offheap-checkpoint': async (dir, records) =>
    (await import('./probes/offheap-checkpoint-probe.js')).probeOffHeapCheckpoint(dir, records),
  'map-rebuild': async (dir, records) => (await import('./probes/map-rebuild-probe.js')).probeMapRebuild(dir, records),
  lmdb: async (dir, records) => (await import('./probes/lmdb-probe.js')).probeLmdb(dir, records),
  'fs-read': async (dir) => (await import('./probes/fs-read-probe.js')).probeFsRead(dir),
};

async function main([system, dir, recordsText]: string[]): Promise<ProbeMessage> {
  const probe = system !== undefined && Object.hasOwn(probes, system) ? probes[system] : undefined;
  if (probe === undefined || dir === undefined)
    throw new Error(`usage: probe.js <${Object.keys(probes).join('|')}> <dir> <records>`);
  return { kind: 'samples', samples: await probe(dir, Number(recordsText)) };
}

function send(message: ProbeMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) reject(new Error('probe.js must be forked (no IPC channel)'));
    else process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}

main(process.argv.slice(2))
  .catch(
    (error: unknown): ProbeMessage => ({
      kind: 'failed',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    }),
  )
  .then(send)
  .then(
    () => process.exit(0),
    () => process.exit(1),
  );
