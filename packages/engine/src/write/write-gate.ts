/**
 * The gate every write's promise passes: open; stalled, when frozen memtables or level-0 tables pile up faster than
 * background work writes them down (the write is applied at once, its promise waits); slowed past the level-0
 * slowdown trigger (its promise waits one more event-loop turn); or shut by the first background failure (a flush,
 * compaction or WAL write that failed), after which writes are refused with that error.
 *
 * The write path asks it for each write's promise; background work tells it when it has caught up or failed.
 */
import type { ResolvedOptions } from '../base/options.js';
import type { VersionSet } from '../version/version-set.js';
import type { MemtableSet } from './memtables.js';

/** Frozen memtables waiting for a flush before writes start to wait. */
export const MAX_FROZEN_MEMTABLES = 3;

interface StallWaiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

const noop = (): void => {};

/** A promise that resolves on the next turn of the event loop. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class WriteGate {
  private readonly memtables: MemtableSet;
  private readonly versions: VersionSet;
  private readonly options: ResolvedOptions;
  private failure: Error | undefined;
  private waiters: StallWaiter[] = [];
  /** Writes whose promise waited for background work. */
  stalls = 0;
  /** Writes delayed a turn because level 0 passed the slowdown trigger. */
  slowdowns = 0;
  /** Milliseconds during which some write's promise was stalled (RocksDB's stall micros, in ms). */
  stallMillis = 0;
  /** When the current stall began (performance.now()), while writes wait. */
  private stallStart = 0;

  constructor(memtables: MemtableSet, versions: VersionSet, options: ResolvedOptions) {
    this.memtables = memtables;
    this.versions = versions;
    this.options = options;
  }

  /** The first background failure, once there was one: writes are refused with it. */
  get error(): Error | undefined {
    return this.failure;
  }

  /** Records the first background failure and rejects the stalled writes with it. Later failures are ignored. */
  fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
  }

  private stalled(): boolean {
    const memtables = this.memtables;
    return (
      memtables.frozenCount >= MAX_FROZEN_MEMTABLES ||
      // A full live memtable waits for the frozen one's flush (write-path.ts): LevelDB's MakeRoomForWrite.
      (memtables.frozenCount > 0 && memtables.live.memoryUsage >= this.options.writeBufferSize) ||
      this.versions.current.files[0]!.length >= this.options.level0StopTrigger
    );
  }

  /** The promise of a write that is durable once `durable` settles, delayed while background work lags. */
  admit(durable: Promise<void>): Promise<void> {
    if (this.stalled()) {
      this.stalls++;
      if (this.waiters.length === 0) this.stallStart = performance.now();
      const stalled = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
      return Promise.all([durable, stalled]).then(noop);
    }
    if (this.versions.current.files[0]!.length >= this.options.level0SlowdownTrigger) {
      this.slowdowns++;
      return durable.then(nextTurn);
    }
    return durable;
  }

  /** Background work installed a change: lets the stalled writes through if the memtables and level 0 allow it. */
  release(): void {
    if (this.waiters.length === 0 || this.stalled()) return;
    this.stallMillis += performance.now() - this.stallStart;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }

  /**
   * At close, once background work is done and the WAL synced and closed: stalled writes are as durable as they can
   * be, and resolve (or reject with the background failure).
   */
  settle(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      if (this.failure) w.reject(this.failure);
      else w.resolve();
    }
  }
}
