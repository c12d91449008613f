/**
 * The child's side of progress: a {@link ProgressTicker} that forwards counts to the parent at most once per
 * interval, whatever the rate at which a workload calls it.
 */
import type { ProgressTicker } from './benchmark.js';
import type { ChildMessage } from './ipc-messages.js';

/** Progress is sent at most this often, so that IPC does not become part of what is measured. */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * The clock is read about this many times per interval. Workloads call `update` anywhere from once per operation
 * (millions a second, where a clock read per call would be measured) to once per batch or attempt (a few a second,
 * where skipping calls would skip every one of them): the number of calls between two clock reads adapts to the rate.
 */
const CLOCK_READS_PER_INTERVAL = 8;
const MAX_CALLS_PER_CLOCK_READ = 1 << 16;

type ProgressMessage = Extract<ChildMessage, { kind: 'progress' }>;

/** A ticker that sends at most one progress message per {@link PROGRESS_INTERVAL_MS}, and one when it finishes. */
export class ThrottledTicker implements ProgressTicker {
  private lastSent: number;
  private lastRead: number;
  private calls = 0;
  private callsPerRead = 1;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly send: (message: ProgressMessage) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lastSent = this.lastRead = now();
    send({ kind: 'progress', label, done: 0, total });
  }

  update(done: number): void {
    if (++this.calls < this.callsPerRead) return;
    this.calls = 0;
    const now = this.now();
    if (now - this.lastRead < PROGRESS_INTERVAL_MS / CLOCK_READS_PER_INTERVAL) {
      this.callsPerRead = Math.min(this.callsPerRead * 2, MAX_CALLS_PER_CLOCK_READ);
    } else if (this.callsPerRead > 1) {
      this.callsPerRead >>= 1;
    }
    this.lastRead = now;
    if (now - this.lastSent < PROGRESS_INTERVAL_MS) return;
    this.lastSent = now;
    this.send({ kind: 'progress', label: this.label, done, total: this.total });
  }

  finish(): void {
    this.send({ kind: 'progress', label: this.label, done: this.total, total: this.total });
  }
}
