/**
 * Child-process entry: runs one system of one benchmark for one run and reports back over IPC.
 *
 * Started by the orchestrator with `child_process.fork`, so that the heap, GC pauses and RSS it reports belong to
 * this system alone. It waits for one {@link JobMessage}, runs the workload, sends samples and progress, and exits.
 */
import process from 'node:process';
import { type RunContext, type Sample, SystemUnavailableError } from './benchmark.js';
import type { ChildMessage, JobMessage } from './ipc-messages.js';
import { ThrottledTicker } from './progress-ticker.js';
import { loadDefinition } from './registry.js';

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) {
      reject(new Error('runner.js must be started by the bench orchestrator (no IPC channel)'));
      return;
    }
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}

async function runJob(job: JobMessage): Promise<ChildMessage> {
  const definition = await loadDefinition(job.benchmark);
  const ctx: RunContext = {
    system: job.system,
    records: job.records,
    phases: new Set(job.phases),
    dataDir: job.dataDir,
    run: job.run,
    record: (sample: Sample) => void send({ kind: 'sample', sample }),
    progress: (label, total) => new ThrottledTicker(label, total, (message) => void send(message)),
  };
  try {
    const workload = await definition.loadWorkload();
    await workload.run(ctx);
    return { kind: 'done' };
  } catch (error) {
    if (error instanceof SystemUnavailableError) return { kind: 'unavailable', reason: error.message };
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    return { kind: 'failed', message };
  }
}

process.once('message', (job: JobMessage) => {
  runJob(job)
    .then(send)
    .then(
      () => process.exit(0),
      () => process.exit(1),
    );
});
