/**
 * The KV actor's checks that need none of its options: ill-formed strings, and metadata names and values, whose
 * bounds are the map's (`MAX_META_NAME_BYTES`, `MAX_META_VALUE_BYTES` of @heapless/offheap), not the actor's.
 */
import { HeaplessError } from '@heapless/client/protocol';
import { MAX_META_NAME_BYTES, MAX_META_VALUE_BYTES } from '@heapless/offheap';

/** A string with a lone surrogate: it has no UTF-8 form of its own, so it could only alias another key. */
export function illFormed(what: string, s: string): HeaplessError {
  return new HeaplessError(
    'BAD_ARGUMENTS',
    `${what} is not well-formed UTF-16 (a lone surrogate): ${JSON.stringify(s)}`,
  );
}

/** Throws `BAD_ARGUMENTS` (not a non-empty well-formed string) or `KEY_TOO_LARGE` (over 255 UTF-8 bytes). */
export function checkMetaName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new HeaplessError('BAD_ARGUMENTS', 'a metadata name is a non-empty string');
  }
  if (!name.isWellFormed()) throw illFormed('a metadata name', name);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only long names need counting.
  if (name.length * 3 > MAX_META_NAME_BYTES && Buffer.byteLength(name) > MAX_META_NAME_BYTES) {
    throw new HeaplessError(
      'KEY_TOO_LARGE',
      `metadata name of ${Buffer.byteLength(name)} bytes, the limit is ${MAX_META_NAME_BYTES}`,
    );
  }
}

/** Throws `BAD_ARGUMENTS` (not bytes) or `VALUE_TOO_LARGE` (over 64 KiB). */
export function checkMetaValue(value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array))
    throw new HeaplessError('BAD_ARGUMENTS', 'a metadata value is bytes (msgpack bin)');
  if (value.length > MAX_META_VALUE_BYTES) {
    throw new HeaplessError(
      'VALUE_TOO_LARGE',
      `metadata value of ${value.length} bytes, the limit is ${MAX_META_VALUE_BYTES}`,
    );
  }
}
