/** Reconnect delays: exponential from `minDelayMs` to `maxDelayMs`, with jitter. */
export interface BackoffOptions {
  /** Delay before the first reconnect attempt; default 100 ms. */
  minDelayMs?: number;
  /** Largest delay between attempts; default 10 s. */
  maxDelayMs?: number;
}

/**
 * The delay before reconnect attempt `attempt` (0-based): `min(max, min * 2^attempt)`, then "equal jitter" (a random
 * point in its upper half) so that many clients dropped by one server restart do not come back in lockstep.
 * `random` is injectable for tests.
 */
export function backoffDelay(attempt: number, opts: Required<BackoffOptions>, random: () => number = Math.random) {
  const ceiling = Math.min(opts.maxDelayMs, opts.minDelayMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + (random() * ceiling) / 2;
}
