/**
 * The check of every option of this package that becomes a timer's delay (a JetStream request's timeout, a pull's
 * expiry, a wait for a write to be applied).
 */
import { ReplicaError } from './errors.js';

/**
 * The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms with only a
 * TimeoutOverflowWarning, which would turn a generous timeout into an immediate failure.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` checked as a delay: an integer from `min` to {@link MAX_TIMER_MS}. Throws INVALID_ARGUMENT naming `name`. */
export function durationMs(name: string, ms: number, min = 1): number {
  if (!Number.isInteger(ms) || ms < min || ms > MAX_TIMER_MS)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `${name} must be an integer from ${min} to ${MAX_TIMER_MS} ms, got ${ms}`,
    );
  return ms;
}
