/**
 * The one table of the replica package's error codes, in the shape every heapless package's table has: keyed by the
 * stable code (`HEAPLESS_ERR_REPLICA_<NAME>`) that programs compare, each with its default message. Every error this
 * package raises on purpose is a {@link ReplicaError} with one of these codes; what NATS itself raised is kept as
 * `cause`. The README's error table lists the same codes (a test checks).
 */
export const REPLICA_ERRORS = {
  /** An option, a name (stream, bucket, schema id, message id) or an argument that this package refuses. */
  HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT: { message: 'invalid argument' },
  /** A change message's payload that is not the msgpack shape of FORMAT.md; the message names the offset. */
  HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE: { message: 'malformed change message' },
  /** A change message without the `Heapless-Format` or `Heapless-Schema` header, or with an ill-formed one. */
  HEAPLESS_ERR_REPLICA_BAD_HEADER: { message: 'missing or ill-formed change message header' },
  /** A change message of a format version this version does not read (only 1 exists). */
  HEAPLESS_ERR_REPLICA_UNSUPPORTED_FORMAT: { message: 'unsupported change message format version' },
  /** A key that is not a well-formed string (a lone surrogate), or not valid UTF-8 in a message. */
  HEAPLESS_ERR_REPLICA_INVALID_KEY: { message: 'invalid key' },
  /** A key longer, in UTF-8 bytes, than the limit (1 KiB by default, the KV actor's). */
  HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE: { message: 'key too large' },
  /** A value longer than the limit (1 MiB by default, the KV actor's). */
  HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE: { message: 'value too large' },
  /** A message of no change, or of more changes than the limit (4096 by default, a frame's calls). */
  HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES: { message: 'no change, or too many changes in one message' },
  /** An encoded message larger than the server's `max_payload`; it was never published. */
  HEAPLESS_ERR_REPLICA_MESSAGE_TOO_LARGE: { message: 'change message larger than the server accepts' },
  /** A message of another schema id than the one followed: the follower must reload from a checkpoint. */
  HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH: { message: 'change message of another schema' },
  /** NATS is unreachable, or JetStream did not answer within the timeout; the operation may be retried. */
  HEAPLESS_ERR_REPLICA_UNAVAILABLE: { message: 'NATS JetStream is unavailable' },
  /** No stream of that name. */
  HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND: { message: 'no such stream' },
  /** A stream exists under the name with another subject, replica count, dedup window or storage. */
  HEAPLESS_ERR_REPLICA_STREAM_MISMATCH: { message: 'the stream exists with another configuration' },
  /** The stream no longer holds the message after the stored position (purged or aged out): reload. */
  HEAPLESS_ERR_REPLICA_POSITION_PURGED: { message: 'the stream no longer holds the next message' },
  /** The stored position is past the stream's last message (the stream was recreated, or is another one). */
  HEAPLESS_ERR_REPLICA_POSITION_AHEAD: { message: 'the position is past the end of the stream' },
  /** A message in the middle of the stream was deleted: what follows cannot be applied without it. */
  HEAPLESS_ERR_REPLICA_SEQUENCE_GAP: { message: 'a message of the stream is missing' },
  /** No checkpoint of that schema (or of that id) in the bucket. */
  HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND: { message: 'no such checkpoint' },
  /** A checkpoint whose manifest is malformed, or a file whose size or checksum differs from it. */
  HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT: { message: 'checkpoint is corrupt' },
  /** The publisher, consumer or bucket was closed by its owner. */
  HEAPLESS_ERR_REPLICA_CLOSED: { message: 'closed' },
  /** Any other refusal of the NATS server (permissions, limits, an API error); the cause says what. */
  HEAPLESS_ERR_REPLICA_NATS_ERROR: { message: 'NATS refused the operation' },
  /** A local file of a checkpoint that could not be read or written (a full or read-only disk, an I/O error). */
  HEAPLESS_ERR_REPLICA_LOCAL_IO: { message: 'a local file could not be read or written' },
} as const satisfies Record<`HEAPLESS_ERR_REPLICA_${string}`, { message: string }>;

/** A stable replica error code, e.g. `'HEAPLESS_ERR_REPLICA_UNAVAILABLE'`. */
export type ReplicaErrorCode = keyof typeof REPLICA_ERRORS;

type ShortName<C> = C extends `HEAPLESS_ERR_REPLICA_${infer S}` ? S : never;

/** The codes by their short name (`ReplicaErrorCodes.CLOSED === 'HEAPLESS_ERR_REPLICA_CLOSED'`), from the table. */
export const ReplicaErrorCodes = Object.freeze(
  Object.fromEntries(
    (Object.keys(REPLICA_ERRORS) as ReplicaErrorCode[]).map((c) => [c.slice('HEAPLESS_ERR_REPLICA_'.length), c]),
  ),
) as { readonly [C in ReplicaErrorCode as ShortName<C>]: C };

/** Whether `code` is one of the table's codes. */
export function isReplicaErrorCode(code: unknown): code is ReplicaErrorCode {
  return typeof code === 'string' && Object.hasOwn(REPLICA_ERRORS, code);
}

/** The error every operation of this package rejects with on purpose; `code` is stable, the message says more. */
export class ReplicaError extends Error {
  override readonly name = 'ReplicaError';
  /** The stable code, e.g. `'HEAPLESS_ERR_REPLICA_POSITION_PURGED'`. */
  readonly code: ReplicaErrorCode;

  /** `message` defaults to the table's description of `code`. */
  constructor(code: ReplicaErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? REPLICA_ERRORS[code].message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/**
 * `err` as one line for a status or a log: `CODE: message` when it carries a stable string code (a ReplicaError's,
 * the map's or the engine's: `HEAPLESS_ERR_...`), so that whoever reads `/healthz` or the log can match on it; its
 * message alone otherwise.
 */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? `${code}: ${message}` : message;
}

/** Whether `err` is a {@link ReplicaError} of `code`. */
export function isReplicaError(err: unknown, code?: ReplicaErrorCode): err is ReplicaError {
  return err instanceof ReplicaError && (code === undefined || err.code === code);
}
