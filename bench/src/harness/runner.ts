/**
 * Child-process entry: runs one system of one benchmark for one run and reports back over IPC.
 *
 * Started by the orchestrator with `child_process.fork`, so that the heap, GC pauses and RSS it reports belong to
 * this system alone. It waits for one {@link JobMessage}, runs the workload, sends samples and progress, and exits.
 */
import process from 'node:process';
import { type ProgressTicker, type RunContext, type Sample, SystemUnavailableError } from './benchmark.js';
import type { ChildMessage, JobMessage } from './ipc-messages.js';
import { loadDefinition } from './registry.js';

/** Progress is sent at most this often, so that IPC does not become part of what is measured. */
const PROGRESS_INTERVAL_MS = 250;

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) {
      reject(new Error('runner.js must be started by the bench orchestrator (no IPC channel)'));
      return;
    }
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}

/** A ticker that forwards at most one progress message per interval; checking the clock is itself throttled. */
class ThrottledTicker implements ProgressTicker {
  private lastSent = 0;
  private calls = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
  ) {
    void send({ kind: 'progress', label, done: 0, total });
  }

  update(done: number): void {
    // performance.now() costs tens of nanoseconds; look at it only every 1024 updates.
    if ((++this.calls & 1023) !== 0) return;
    const now = performance.now();
    if (now - this.lastSent < PROGRESS_INTERVAL_MS) return;
    this.lastSent = now;
    void send({ kind: 'progress', label: this.label, done, total: this.total });
  }

  finish(): void {
    void send({ kind: 'progress', label: this.label, done: this.total, total: this.total });
  }
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
    progress: (label, total) => new ThrottledTicker(label, total),
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
