/**
 * Periodic full compaction (seed 004's daily `compactRange()`, RocksDB's periodic compaction): the engine option
 * `periodicCompaction` schedules a compaction of the whole key range every `everySeconds`, or each day at `at`
 * ('HH:MM', the process's local time). The compaction runs as `compactRange()` does: its jobs run on the worker
 * threads, writes go on meanwhile and stall only at the usual triggers.
 *
 * The timer is unref'd (it never keeps the process alive) and the next run is scheduled only once the previous one
 * has finished, so runs never overlap. `stop()` (the engine's close) clears the timer and waits for a running one.
 */
import { MAX_TIMER_MS } from '../base/max-timer.js';
import type { PeriodicCompactionSchedule } from '../base/options.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Milliseconds from `now` to the next run of `schedule`: `everySeconds` from now, or the next time the local clock
 * shows `at` (tomorrow's if today's has passed or is now).
 */
export function delayUntilNext(schedule: PeriodicCompactionSchedule, now: Date): number {
  if ('everySeconds' in schedule) return schedule.everySeconds * 1000;
  const [hours, minutes] = schedule.at.split(':').map(Number) as [number, number];
  const next = new Date(now.getTime());
  next.setHours(hours, minutes, 0, 0);
  let delay = next.getTime() - now.getTime();
  if (delay <= 0) delay += DAY_MS;
  return delay;
}

/** What the scheduler needs of its environment; the engine passes the real clock, tests a fake one. */
export interface SchedulerClock {
  now(): Date;
  setTimeout(fn: () => void, ms: number): { unref?: () => unknown };
  clearTimeout(timer: unknown): void;
}

const realClock: SchedulerClock = {
  now: () => new Date(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

export class PeriodicCompaction {
  /** Runs that finished (whether or not they compacted anything). */
  runs = 0;
  private readonly schedule: PeriodicCompactionSchedule | false;
  private readonly compact: () => Promise<void>;
  private readonly clock: SchedulerClock;
  private timer: unknown;
  private running: Promise<void> | undefined;
  private stopped = false;

  /** Schedules `compact` on `schedule` (false: never) until `stop()`. */
  constructor(schedule: PeriodicCompactionSchedule | false, compact: () => Promise<void>, clock = realClock) {
    this.schedule = schedule;
    this.compact = compact;
    this.clock = clock;
    this.arm();
  }

  private arm(): void {
    if (this.schedule === false || this.stopped) return;
    const now = this.clock.now().getTime();
    this.wait(now + delayUntilNext(this.schedule, new Date(now)));
  }

  /** Sets the timer for `due` (ms since the epoch), in steps no timer overflows. */
  private wait(due: number): void {
    const left = due - this.clock.now().getTime();
    const timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        if (left > MAX_TIMER_MS) this.wait(due);
        else this.fire();
      },
      Math.min(Math.max(left, 0), MAX_TIMER_MS),
    );
    timer.unref?.();
    this.timer = timer;
  }

  private fire(): void {
    this.running = this.compact()
      // A close under the run stops it (CLOSED); any other failure has shut the write gate, which reports it to
      // every later write: nothing is left to report here.
      .catch(() => {})
      .finally(() => {
        this.running = undefined;
        this.runs++;
        this.arm();
      });
  }

  /** Clears the timer and resolves once a running compaction has stopped. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
