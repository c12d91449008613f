/**
 * The one retry loop of the package: a publish sent again while JetStream is unavailable, the reader getting a
 * consumer again, the follower starting its reader again, and a replica connecting in the background all call
 * {@link retry} with their own {@link Backoff} (delays, cap), their own test of what is worth another attempt, and
 * their own report of a failure. A close stops the loop at once: `stopped` is checked before each attempt and
 * after each failure, and `wake()` cuts the pause short.
 */
import { WakeablePause } from './pause.js';

/** Delays between attempts: `firstMs`, doubled after each one up to `maxMs` (equal: a fixed delay); `reset` starts over. */
export class Backoff {
  #nextMs: number;
  readonly #pause = new WakeablePause();

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
  ) {
    this.#nextMs = firstMs;
  }

  /** The delay to wait now; the one after is twice as long, at most `maxMs`. */
  next(): number {
    const ms = this.#nextMs;
    this.#nextMs = Math.min(ms * 2, this.maxMs);
    return ms;
  }

  /** The next delay is `firstMs` again (after a success). */
  reset(): void {
    this.#nextMs = this.firstMs;
  }

  /** Waits the {@link next} delay, or until {@link wake}. */
  wait(): Promise<void> {
    return this.#pause.sleep(this.next());
  }

  /** Ends the wait in progress, if any (a close must not wait for it). */
  wake(): void {
    this.#pause.wake();
  }
}

/** How {@link retry} goes on after a failure. */
export interface RetryOptions {
  readonly backoff: Backoff;
  /** Whether the owner is stopping (or stopped for another reason): checked before each attempt, after each failure. */
  readonly stopped: () => boolean;
  /** Whether a failure is worth another attempt; any other ends the loop, thrown. */
  readonly retryable: (err: unknown) => boolean;
  /** Told about each failure that is retried, before the pause; what it throws ends the loop. */
  readonly onRetry?: (err: unknown) => void;
  /** Pauses before the first attempt too (the caller's own attempt has just failed). */
  readonly pauseFirst?: boolean;
}

/**
 * Calls `attempt` until it resolves, and resolves with its value; with undefined once `stopped()` (before an
 * attempt, or after a failure). Rejects with a failure that is not `retryable`, or with what `onRetry` throws.
 */
export async function retry<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T | undefined> {
  if (options.pauseFirst === true) await options.backoff.wait();
  while (!options.stopped()) {
    try {
      return await attempt();
    } catch (err) {
      if (!options.retryable(err)) throw err;
      if (options.stopped()) return undefined;
      options.onRetry?.(err);
      await options.backoff.wait();
    }
  }
  return undefined;
}
