/**
 * The check of every option of this package that becomes a timer's delay (a JetStream request's timeout, a pull's
 * expiry, a wait for a write to be applied).
 */
import { MAX_TIMER_MS } from '@heapless/engine';
import { ReplicaError } from './errors.js';

/** `ms` checked as a delay: an integer from `min` to {@link MAX_TIMER_MS}. Throws INVALID_ARGUMENT naming `name`. */
export function durationMs(name: string, ms: number, min = 1): number {
  if (!Number.isInteger(ms) || ms < min || ms > MAX_TIMER_MS)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `${name} must be an integer from ${min} to ${MAX_TIMER_MS} ms, got ${ms}`,
    );
  return ms;
}
