/**
 * The one table of heapless error codes that can cross the wire, plus the few that only a client raises.
 *
 * Each code has a stable string (`code`, what programs compare), a stable number (`wire`, what a reply frame
 * carries, see FORMAT.md) and the HTTP status the HTTP routes answer with. Numbers are grouped by who raises them:
 * 1xx the protocol, 2xx authentication, 3xx the actor runtime, 4xx the KV actor and its storage, 5xx the server,
 * 9xx the client itself (never sent). A number is never reused for another meaning; new codes take the next free
 * number of their group.
 */
export const ERROR_CODES = {
  /** A frame or body that is not msgpack (or JSON), or whose top level is not the documented shape. */
  BAD_FRAME: { wire: 100, status: 400, message: 'malformed frame or body' },
  /** One call of a frame has the wrong shape: method not a string, args not an array. */
  BAD_REQUEST: { wire: 101, status: 400, message: 'malformed call' },
  /** The method does not exist or is not public; the two are not told apart on purpose. */
  UNKNOWN_METHOD: { wire: 102, status: 404, message: 'unknown method' },
  /** A WebSocket frame larger than the server's maxFrameBytes (the server closes with 1009). */
  FRAME_TOO_LARGE: { wire: 103, status: 413, message: 'frame too large' },
  /** A frame with more calls than maxCallsPerFrame (the server closes with 1008). */
  TOO_MANY_CALLS: { wire: 104, status: 400, message: 'too many calls in one frame' },
  /** An HTTP body larger than the server's maxBodyBytes. */
  BODY_TOO_LARGE: { wire: 105, status: 413, message: 'body too large' },
  /**
   * An HTTP body of a content type the route does not take; the message and the `Accept` header of the answer list
   * those it takes.
   */
  UNSUPPORTED_MEDIA_TYPE: { wire: 106, status: 415, message: 'unsupported media type' },
  /** A WebSocket text frame; the protocol is binary only (the server closes with 1003). */
  TEXT_FRAME: { wire: 107, status: 400, message: 'text frames are not supported' },
  /**
   * An HTTP URL whose path or query is not valid percent-encoded UTF-8 (`%FF`, `%ED%A0%80`, a stray `%`): refused
   * rather than decoded with replacement characters or kept as text, either of which would make it name another key.
   */
  BAD_URL: { wire: 108, status: 400, message: 'malformed URL' },
  /** An HTTP method and path the server has no route for. */
  UNKNOWN_ROUTE: { wire: 109, status: 404, message: 'no such route' },
  /** A segment of an HTTP path longer than the router takes (8 KiB, well past the longest key). */
  URL_TOO_LONG: { wire: 110, status: 414, message: 'URL too long' },
  /**
   * A WebSocket that did not offer the `heapless.v1` subprotocol: the server completes the handshake and closes at
   * once with 1002, reason `UNSUPPORTED_PROTOCOL` (a client of another protocol version sees this too).
   */
  UNSUPPORTED_PROTOCOL: { wire: 111, status: 400, message: 'the heapless.v1 subprotocol is required' },
  /**
   * The answer has no form in the media type the request's `accept` asks for: a stored value that has no exact JSON
   * form (not msgpack, or msgpack holding bytes, a bigint...) asked for as JSON; the message names the types to ask for.
   */
  NOT_ACCEPTABLE: { wire: 112, status: 406, message: 'no form of the answer in the media type asked for' },
  /** Missing or wrong token (HTTP 401, WebSocket close 4401). */
  UNAUTHORIZED: { wire: 200, status: 401, message: 'missing or wrong token' },
  /** The `Host` header names neither loopback, an IP address nor a configured name (DNS rebinding); close 4403. */
  HOST_NOT_ALLOWED: { wire: 201, status: 421, message: 'host not allowed' },
  /** A browser's `Origin` that is not on the server's allowed origins (another site's page); close 4403. */
  ORIGIN_NOT_ALLOWED: { wire: 202, status: 403, message: 'origin not allowed' },
  /** An administrative call this server does not allow (a KV checkpoint where no checkpoint root is configured). */
  FORBIDDEN: { wire: 203, status: 403, message: 'not allowed on this server' },
  /** The actor's method threw an error that carries no heapless code; the message is the error's message. */
  ACTOR_ERROR: { wire: 300, status: 500, message: 'the actor method failed' },
  /** The arguments have the wrong number or types; raised by the actor's own checks. */
  BAD_ARGUMENTS: { wire: 301, status: 400, message: 'wrong arguments' },
  /** The actor's mailbox is full and its overflow policy is 'reject'. */
  MAILBOX_FULL: { wire: 302, status: 503, message: 'actor mailbox is full' },
  /** The actor was stopped; queued calls that were not drained get this too. */
  ACTOR_STOPPED: { wire: 303, status: 503, message: 'actor is stopped' },
  /** A key longer than the KV actor's maxKeyBytes (UTF-8). */
  KEY_TOO_LARGE: { wire: 400, status: 413, message: 'key too large' },
  /** A value longer than the KV actor's maxValueBytes. */
  VALUE_TOO_LARGE: { wire: 401, status: 413, message: 'value too large' },
  /** No value under the key (HTTP `GET /v1/kv/:key` only; a call answers `undefined`). */
  NOT_FOUND: { wire: 402, status: 404, message: 'no such key' },
  /**
   * The store's data on disk is damaged (a checksum, a length, a table the manifest names): the engine's
   * CorruptionError, whose message names the file and offset. Nothing wrong was returned; repair with the tools.
   */
  STORAGE_CORRUPTION: { wire: 403, status: 500, message: 'stored data is corrupt' },
  /** An operating-system I/O call of the store failed (disk full, permissions, a removed directory). */
  STORAGE_IO: { wire: 404, status: 503, message: 'storage I/O failed' },
  /** The store is closed or closing (the server is stopping). */
  STORAGE_CLOSED: { wire: 405, status: 503, message: 'storage is closed' },
  /** Another process holds the store's directory. */
  STORAGE_LOCKED: { wire: 406, status: 503, message: 'storage is locked by another process' },
  /**
   * An earlier write could not be persisted, so the store refuses writes (and ordered reads, which come from the
   * engine) until it is restarted; the message carries the first failure.
   */
  STORAGE_PERSIST_FAILED: { wire: 407, status: 503, message: 'an earlier write could not be persisted' },
  /**
   * What a call asked for takes more bytes than one reply may carry (the KV actor's `getMany`, bounded by its
   * `maxResultBytes`, 1 MiB by default): nothing was sent; ask for fewer keys at a time.
   */
  RESULT_TOO_LARGE: { wire: 408, status: 400, message: 'result too large for one reply' },
  /**
   * A KV `batch` or `setMany` with more operations than the actor's `maxBatchOps` (10,000 by default): nothing was
   * written; split it into several batches.
   */
  BATCH_TOO_LARGE: { wire: 409, status: 413, message: 'too many operations in one batch' },
  /**
   * A KV `watch` from a sequence whose changes the store no longer keeps (the WALs holding them were deleted once
   * their data was in tables and past what the store pins) or never had (past its last sequence): nothing was
   * sent; read the current state (a scan) and watch from the sequence it reflects.
   */
  SEQUENCE_GONE: { wire: 410, status: 410, message: 'the changes after that sequence are no longer kept' },
  /**
   * The end of a watch whose watcher fell behind beyond the bound (changes waiting for a slow socket or a slow
   * consumer): every change before it was delivered; watch again from the last sequence received to go on with
   * neither a gap nor a duplicate.
   */
  WATCH_OVERFLOW: { wire: 411, status: 503, message: 'the watcher fell behind' },
  /**
   * A following server (`heapless serve --follow`) could not get a write into its change log (NATS JetStream
   * unreachable, or no acknowledgement within the timeout), or the write is in the log and was not applied here
   * within the timeout. The write may or may not be in the log; retrying writes it again.
   */
  UNAVAILABLE: { wire: 412, status: 503, message: 'the change log is unavailable' },
  /** A fault in the server itself, not in the actor's method. */
  INTERNAL: { wire: 500, status: 500, message: 'internal server error' },
  /** The server is shutting down and takes no new calls (WebSocket close 1001). */
  SHUTTING_DOWN: { wire: 501, status: 503, message: 'server is shutting down' },
  /** A connection that already has the server's maximum of open streams (watches) asked for another. */
  TOO_MANY_STREAMS: { wire: 502, status: 429, message: 'too many open streams on this connection' },
  /** No reply within the call's timeout; the call may still run on the server. */
  TIMEOUT: { wire: 900, status: 504, message: 'call timed out' },
  /** The connection dropped while the call was in flight; the call may or may not have run. */
  CONNECTION_LOST: { wire: 901, status: 502, message: 'connection lost' },
  /** The client was closed by its owner before the call completed. */
  CLIENT_CLOSED: { wire: 902, status: 499, message: 'client closed' },
  /** The first connection could not be opened (refused, bad URL, handshake failed). */
  CONNECT_FAILED: { wire: 903, status: 502, message: 'could not connect' },
  /** A single call's frame would exceed the frame size limit; it was never sent. */
  CALL_TOO_LARGE: { wire: 904, status: 413, message: 'call too large for one frame' },
  /** A struct layout the client refuses: unknown field type, reserved or `_` name, n outside 1..65535, no field. */
  STRUCT_INVALID_LAYOUT: { wire: 905, status: 400, message: 'invalid struct layout' },
  /** A struct value that does not fit its layout: a field of the wrong JS type, or an array index out of range. */
  STRUCT_INVALID_VALUE: { wire: 906, status: 400, message: 'invalid struct value' },
  /** A string longer (in UTF-8 bytes) than its `utf8(n)` field, or an array longer than its `array(t, n)` field. */
  STRUCT_FIELD_OVERFLOW: { wire: 907, status: 413, message: 'struct field overflow' },
  /** Bytes that are not one record of the layout: a stored value of another size, or too little room to write. */
  STRUCT_SIZE_MISMATCH: { wire: 908, status: 502, message: 'bytes are not a record of the struct layout' },
} as const satisfies Record<string, { wire: number; status: number; message: string }>;

/** A stable heapless error code, e.g. `'TIMEOUT'`. */
export type ErrorCode = keyof typeof ERROR_CODES;

const byWire = new Map<number, ErrorCode>();
for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) byWire.set(ERROR_CODES[code].wire, code);

/** The string code for a wire number; numbers this version does not know map to `INTERNAL`. */
export function codeFromWire(wire: number): ErrorCode {
  return byWire.get(wire) ?? 'INTERNAL';
}

/** Whether `code` is one of the codes of the table (for errors thrown by actors that carry a `code`). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
