import { HeaplessError } from './heapless-error.js';
import { isWellFormed } from './well-formed.js';

/**
 * msgpack strings are UTF-8, and a string with a lone surrogate has no UTF-8 form: msgpackr writes U+FFFD in its
 * place, so the server would receive (and store under, for a key) another string than the one given. These two
 * helpers let an encoder refuse such a string at the cost of one `indexOf` per frame: the encoded bytes can hold a
 * replaced surrogate only if they hold EF BF BD, and only then are the values walked.
 */

/** Whether `bytes` holds EF BF BD, the UTF-8 of U+FFFD (or bytes of a `bin` value that happen to be the same). */
export function holdsReplacement(bytes: Uint8Array): boolean {
  for (let i = bytes.indexOf(0xef); i >= 0 && i + 2 < bytes.length; i = bytes.indexOf(0xef, i + 1)) {
    if (bytes[i + 1] === 0xbf && bytes[i + 2] === 0xbd) return true;
  }
  return false;
}

/**
 * The first string in `value` (itself, or inside arrays, plain objects and Maps, keys included) that is not
 * well-formed UTF-16, or undefined. Bytes are not looked into.
 */
export function findIllFormed(value: unknown): string | undefined {
  if (typeof value === 'string') return isWellFormed(value) ? undefined : value;
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return undefined;
  if (Array.isArray(value)) {
    for (const v of value) {
      const bad = findIllFormed(v);
      if (bad !== undefined) return bad;
    }
    return undefined;
  }
  const entries = value instanceof Map ? [...value] : Object.entries(value);
  for (const [k, v] of entries) {
    const bad = findIllFormed(k) ?? findIllFormed(v);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/**
 * `BAD_ARGUMENTS` if `encoded` (the msgpack of `values`, the arguments of `method`) had a lone surrogate replaced,
 * else undefined.
 */
export function illFormedArguments(method: string, encoded: Uint8Array, values: unknown): HeaplessError | undefined {
  const bad = holdsReplacement(encoded) ? findIllFormed(values) : undefined;
  if (bad === undefined) return undefined;
  return new HeaplessError(
    'BAD_ARGUMENTS',
    `arguments of ${method} hold a string that is not well-formed UTF-16 (a lone surrogate), which msgpack cannot carry: ${JSON.stringify(bad)}`,
  );
}
