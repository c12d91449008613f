/**
 * Every error `@heapless/offheap` throws carries a stable `code` from this one table. Callers branch on `code`,
 * never on the message. Errors raised by `@heapless/engine` while persisting (I/O, corruption, lock) are passed
 * through unchanged with the engine's own codes, attached as `cause` when they surface through a map call.
 */
export const OffHeapErrorCodes = {
  /** An argument has the wrong type or is out of range (bad option, key of the wrong kind, bad struct field). */
  INVALID_ARGUMENT: 'HEAPLESS_ERR_OFFHEAP_INVALID_ARGUMENT',
  /** A key is longer than `MAX_KEY_BYTES` once UTF-8 encoded. */
  KEY_TOO_LARGE: 'HEAPLESS_ERR_OFFHEAP_KEY_TOO_LARGE',
  /** A record (header + key + value) does not fit in the largest arena segment. */
  VALUE_TOO_LARGE: 'HEAPLESS_ERR_OFFHEAP_VALUE_TOO_LARGE',
  /**
   * A struct field was given a value it cannot hold: an integer outside its type's range, a string longer than its
   * `utf8(n)`, an array longer than `n`.
   */
  FIELD_OVERFLOW: 'HEAPLESS_ERR_OFFHEAP_FIELD_OVERFLOW',
  /** The value cannot be serialized by the map's codec (msgpackr threw, or a struct map was given a non-object). */
  ENCODE_FAILED: 'HEAPLESS_ERR_OFFHEAP_ENCODE_FAILED',
  /** Stored bytes cannot be decoded (a value stored with `setBytes` that is not msgpack, or a wrong struct size). */
  DECODE_FAILED: 'HEAPLESS_ERR_OFFHEAP_DECODE_FAILED',
  /** The map, reader or view was used after `close()` (or the owner closed the map a reader is attached to). */
  CLOSED: 'HEAPLESS_ERR_OFFHEAP_CLOSED',
  /** A mutation was attempted on a read-only object (an attached reader, or a view positioned by a reader). */
  READ_ONLY: 'HEAPLESS_ERR_OFFHEAP_READ_ONLY',
  /** A struct view is not positioned on a record (call `map.locate(key, view)` first) or its record was removed. */
  VIEW_NOT_POSITIONED: 'HEAPLESS_ERR_OFFHEAP_VIEW_NOT_POSITIONED',
  /** A write to the engine failed earlier; the map is no longer persisting and refuses further mutations. */
  PERSIST_FAILED: 'HEAPLESS_ERR_OFFHEAP_PERSIST_FAILED',
  /** Persisted metadata (format version, codec or struct layout) does not match what this map was opened with. */
  INCOMPATIBLE: 'HEAPLESS_ERR_OFFHEAP_INCOMPATIBLE',
  /** A parallel task (scan, filter, getMany) failed inside a worker thread. The worker's error is the `cause`. */
  WORKER_FAILED: 'HEAPLESS_ERR_OFFHEAP_WORKER_FAILED',
} as const;

export type OffHeapErrorCode = (typeof OffHeapErrorCodes)[keyof typeof OffHeapErrorCodes];

/** Base class of every error thrown by `@heapless/offheap`. */
export class OffHeapError extends Error {
  readonly code: OffHeapErrorCode;
  constructor(code: OffHeapErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
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
