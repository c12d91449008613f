/**
 * The names and limits of the change-message format (FORMAT.md, "Change messages"): subject, headers, the checks
 * on stream names, schema ids and message ids, and the default limits of one message.
 */
import { ReplicaError } from '../errors.js';

/** The format version this package writes and the only one it reads. */
export const FORMAT_VERSION = 1;

/** Header carrying the format version, as decimal text (`1`). */
export const FORMAT_HEADER = 'Heapless-Format';
/** Header carrying the schema id of the values (the layout they are encoded with). */
export const SCHEMA_HEADER = 'Heapless-Schema';
/** JetStream's deduplication header: a publish repeated with the same id inside the window is stored once. */
export const MSG_ID_HEADER = 'Nats-Msg-Id';

/** The subject prefix of change streams: stream `S` takes subject `heapless.S`. */
export const DEFAULT_SUBJECT_PREFIX = 'heapless';

/** Limits of one change message; both the encoder and the decoder enforce them. */
export interface ChangeLimits {
  /** Largest key in UTF-8 bytes; default 1 KiB, the KV actor's default. */
  readonly maxKeyBytes: number;
  /** Largest value in bytes; default 1 MiB, the KV actor's default. */
  readonly maxValueBytes: number;
  /** Most changes in one message; default 4096, the calls a client frame may carry. */
  readonly maxChanges: number;
}

export const DEFAULT_CHANGE_LIMITS: ChangeLimits = {
  maxKeyBytes: 1024,
  maxValueBytes: 1024 * 1024,
  maxChanges: 4096,
};

/**
 * Stream and bucket names: what JetStream accepts in a subject token and a file name alike (no `.`, `*`, `>`,
 * space, path separator), at most 64 characters so that the subject and the store's directory stay short.
 */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Schema ids: printable and safe in a subject, an object name and a file name; at most 128 characters. */
const SCHEMA_ID = /^[A-Za-z0-9._-]{1,128}$/;
/** Message ids: printable ASCII without spaces (a header value), at most 256 characters. */
const MSG_ID = /^[\x21-\x7e]{1,256}$/;

/** Throws INVALID_ARGUMENT unless `name` is a valid stream or bucket name; returns it. */
export function checkName(what: string, name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `${what} must be 1-64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(name)}`,
    );
  return name;
}

/** Throws INVALID_ARGUMENT unless `schema` is a valid schema id; returns it. */
export function checkSchemaId(schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_ID.test(schema))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `a schema id must be 1-128 of A-Z a-z 0-9 . _ -, got ${JSON.stringify(schema)}`,
    );
  return schema;
}

/** Whether `schema` is a valid schema id (for checks of received headers). */
export function isSchemaId(schema: string): boolean {
  return SCHEMA_ID.test(schema);
}

/** Throws INVALID_ARGUMENT unless `id` is a valid message id; returns it. */
export function checkMsgId(id: unknown): string {
  if (typeof id !== 'string' || !MSG_ID.test(id))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `a message id must be 1-256 printable ASCII characters without spaces, got ${JSON.stringify(id)}`,
    );
  return id;
}

/** The subject of stream `stream`'s change messages: `<prefix>.<stream>`. */
export function changeSubject(stream: string, prefix: string = DEFAULT_SUBJECT_PREFIX): string {
  checkName('a stream name', stream);
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `a subject prefix must be dot-separated tokens, got '${prefix}'`,
    );
  return `${prefix}.${stream}`;
}

/** The limits with defaults filled in; throws INVALID_ARGUMENT for a limit that is not a positive integer. */
export function changeLimits(limits: Partial<ChangeLimits> = {}): ChangeLimits {
  const out = { ...DEFAULT_CHANGE_LIMITS, ...limits };
  for (const [name, value] of Object.entries(out))
    if (!Number.isSafeInteger(value) || value < 1)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `${name} must be a positive integer, got ${value}`,
      );
  if (out.maxValueBytes > 0xffff_ffff || out.maxKeyBytes > 0xffff_ffff)
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', 'a msgpack str or bin holds at most 2^32-1 bytes');
  return out;
}
