/**
 * Counters (`OffHeapMap.incr`, FORMAT.md §14): a key's value read as a 64-bit signed integer, plus a delta, written
 * back as msgpackr writes that number — a msgpack integer up to 32 bits, a float64 (exact) up to 2^53 − 1 in
 * magnitude, so that a plain `get` reads a number — and, beyond the safe integers, a bigint, which msgpackr writes as
 * int64 and reads back as a bigint. Overflow past int64 is an error, never a wrap.
 */
import { invalidArgument, keyText, OffHeapError, OffHeapErrorCodes } from '../errors.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** `delta` as given to `incr`; throws INVALID_ARGUMENT unless it is a safe integer or a bigint within int64. */
export function counterDelta(delta: unknown): number | bigint {
  if (typeof delta === 'number' && Number.isSafeInteger(delta)) return delta;
  if (typeof delta === 'bigint' && delta >= INT64_MIN && delta <= INT64_MAX) return delta;
  throw invalidArgument(`incr takes an integer delta (a safe integer or an int64 bigint), got ${String(delta)}`);
}

/**
 * `current` (a key's decoded value; undefined: absent, counted as 0) plus `delta`: a number when the sum is a safe
 * integer, else a bigint. Throws NOT_AN_INTEGER (`current` is not an integer within int64), COUNTER_OVERFLOW (the
 * sum is outside int64).
 */
export function addCounter(key: string | Uint8Array, current: unknown, delta: number | bigint): number | bigint {
  const base = current === undefined ? 0 : current;
  if (typeof base === 'number' && typeof delta === 'number' && Number.isSafeInteger(base)) {
    const sum = base + delta;
    if (Number.isSafeInteger(sum)) return sum;
  }
  let big: bigint;
  if (typeof base === 'bigint') big = base;
  else if (typeof base === 'number' && Number.isInteger(base)) big = BigInt(base);
  else throw notAnInteger(key, base);
  if (big < INT64_MIN || big > INT64_MAX) throw notAnInteger(key, base);
  const sum = big + BigInt(delta);
  if (sum < INT64_MIN || sum > INT64_MAX) {
    throw new OffHeapError(
      OffHeapErrorCodes.COUNTER_OVERFLOW,
      `incr of ${keyText(key)} by ${delta} overflows a 64-bit signed integer (it holds ${big})`,
    );
  }
  return sum >= BigInt(Number.MIN_SAFE_INTEGER) && sum <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(sum) : sum;
}

function notAnInteger(key: string | Uint8Array, value: unknown): OffHeapError {
  const what = typeof value === 'number' ? String(value) : typeof value;
  return new OffHeapError(
    OffHeapErrorCodes.NOT_AN_INTEGER,
    `incr of ${keyText(key)}: its value (${what}) is not a 64-bit signed integer`,
  );
}
