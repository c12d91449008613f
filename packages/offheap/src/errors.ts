/**
 * The one table of the codes `@heapless/offheap` throws with, keyed by the stable code string (what programs
 * compare; public: never renamed or reused), each with the table's short description, which is an error's message
 * when the thrower has nothing more precise to say. Callers branch on `code`, never on the message. Errors raised by
 * `@heapless/engine` while persisting (I/O, corruption, lock) pass through unchanged with the engine's own codes,
 * attached as `cause` when they surface through a map call. The README's error table lists the same codes (a test
 * checks it).
 */
export const OFFHEAP_ERRORS = {
  /** An argument has the wrong type or is out of range (bad option, key of the wrong kind, bad struct field). */
  HEAPLESS_ERR_OFFHEAP_INVALID_ARGUMENT: { message: 'invalid argument' },
  /** A key is longer than `MAX_KEY_BYTES` once UTF-8 encoded. */
  HEAPLESS_ERR_OFFHEAP_KEY_TOO_LARGE: { message: 'key too large' },
  /** A record (header + key + value) does not fit in the largest arena segment, or the arena is out of segments. */
  HEAPLESS_ERR_OFFHEAP_VALUE_TOO_LARGE: { message: 'value too large' },
  /**
   * A struct field was given a value it cannot hold: an integer outside its type's range, a string longer than its
   * `utf8(n)`, an array longer than `n`.
   */
  HEAPLESS_ERR_OFFHEAP_FIELD_OVERFLOW: { message: 'struct field overflow' },
  /** The value cannot be serialized by the map's codec (msgpackr threw, or a struct map was given a non-object). */
  HEAPLESS_ERR_OFFHEAP_ENCODE_FAILED: { message: 'value cannot be serialized' },
  /** Stored bytes cannot be decoded (a value stored with `setBytes` that is not msgpack, or a wrong struct size). */
  HEAPLESS_ERR_OFFHEAP_DECODE_FAILED: { message: 'stored bytes cannot be decoded' },
  /** The map, reader or view was used after `close()` (or the owner closed the map a reader is attached to). */
  HEAPLESS_ERR_OFFHEAP_CLOSED: { message: 'closed' },
  /** A mutation was attempted on a read-only object (an attached reader, or a view positioned by a reader). */
  HEAPLESS_ERR_OFFHEAP_READ_ONLY: { message: 'read-only' },
  /** A struct view is not positioned on a record (call `map.locate(key, view)` first) or its record was removed. */
  HEAPLESS_ERR_OFFHEAP_VIEW_NOT_POSITIONED: { message: 'view is not positioned' },
  /** A write to the engine failed earlier; the map is no longer persisting and refuses further mutations. */
  HEAPLESS_ERR_OFFHEAP_PERSIST_FAILED: { message: 'an earlier engine write failed' },
  /** Persisted metadata (format version, codec or struct layout) does not match what this map was opened with. */
  HEAPLESS_ERR_OFFHEAP_INCOMPATIBLE: { message: 'the directory holds another kind of map' },
  /** A parallel task (scan, filter, getMany) failed inside a worker thread. The worker's error is the `cause`. */
  HEAPLESS_ERR_OFFHEAP_WORKER_FAILED: { message: 'a parallel task failed in a worker' },
  /**
   * A write's check failed (`ifVersion`, `ifAbsent`, a batch's `check`): the key's version is not the one expected.
   * Nothing was written. The error (`VersionMismatchError`) carries the key's current version, or null if absent.
   */
  HEAPLESS_ERR_OFFHEAP_VERSION_MISMATCH: { message: 'version mismatch' },
  /** `incr` of a key whose value is not an integer within 64-bit signed range. Nothing was written. */
  HEAPLESS_ERR_OFFHEAP_NOT_AN_INTEGER: { message: 'the value is not a 64-bit signed integer' },
  /** `incr` whose result would leave the 64-bit signed range (it never wraps). Nothing was written. */
  HEAPLESS_ERR_OFFHEAP_COUNTER_OVERFLOW: { message: 'counter overflow' },
} as const satisfies Record<`HEAPLESS_ERR_OFFHEAP_${string}`, { message: string }>;

/** A stable offheap error code, e.g. `'HEAPLESS_ERR_OFFHEAP_CLOSED'`. */
export type OffHeapErrorCode = keyof typeof OFFHEAP_ERRORS;

type ShortName<C> = C extends `HEAPLESS_ERR_OFFHEAP_${infer S}` ? S : never;

/** The codes by their short name (`OffHeapErrorCodes.CLOSED === 'HEAPLESS_ERR_OFFHEAP_CLOSED'`), from the table. */
export const OffHeapErrorCodes = Object.freeze(
  Object.fromEntries(
    (Object.keys(OFFHEAP_ERRORS) as OffHeapErrorCode[]).map((c) => [c.slice('HEAPLESS_ERR_OFFHEAP_'.length), c]),
  ),
) as { readonly [C in OffHeapErrorCode as ShortName<C>]: C };

/** Whether `code` is one of the table's codes (a worker's error, which crossed a thread as data, carries it). */
export function isOffHeapErrorCode(code: unknown): code is OffHeapErrorCode {
  return typeof code === 'string' && Object.hasOwn(OFFHEAP_ERRORS, code);
}

/** Base class of every error thrown by `@heapless/offheap`. */
export class OffHeapError extends Error {
  /** The stable code, from `OFFHEAP_ERRORS`. */
  readonly code: OffHeapErrorCode;
  /** `message` defaults to the table's description of `code`. */
  constructor(code: OffHeapErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? OFFHEAP_ERRORS[code].message, options);
    this.code = code;
    this.name = 'OffHeapError';
  }
}

export function invalidArgument(message: string): OffHeapError {
  return new OffHeapError(OffHeapErrorCodes.INVALID_ARGUMENT, message);
}

export function closedError(what: string): OffHeapError {
  return new OffHeapError(OffHeapErrorCodes.CLOSED, `${what} is closed`);
}

/** A failed check of a write (VERSION_MISMATCH): what the key's version is, and what the write expected. */
export class VersionMismatchError extends OffHeapError {
  /**
   * `expected`: the version the write was to find, or -1 for "absent"; `current`: the key's version, or null when
   * it is absent (or expired).
   */
  constructor(
    readonly key: string | Uint8Array,
    expected: number,
    readonly current: number | null,
  ) {
    super(
      OffHeapErrorCodes.VERSION_MISMATCH,
      `key ${keyText(key)} is ${current === null ? 'absent' : `at version ${current}`}, the write expected ${expected < 0 ? 'it absent' : `version ${expected}`}`,
    );
    this.name = 'VersionMismatchError';
  }
}

/** A key as an error message names it: a string key quoted, a byte key in hex. */
export function keyText(key: string | Uint8Array): string {
  return typeof key === 'string' ? JSON.stringify(key) : `0x${Buffer.from(key).toString('hex')}`;
}
