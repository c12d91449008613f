/**
 * A change message as stored in the stream: its headers (format version, schema id, message id) and its payload
 * (change-codec.ts). This file builds the headers of a publish and reads a received message back, header checks
 * first, so that a message of another format or schema is refused before its payload is read.
 */
import type { WriteOp } from '@heapless/client/protocol';
import { Match, type MsgHdrs, headers as natsHeaders } from '@nats-io/nats-core';
import { ReplicaError } from '../errors.js';
import { decodeChanges } from './change-codec.js';
import {
  type ChangeLimits,
  DEFAULT_CHANGE_LIMITS,
  FORMAT_HEADER,
  FORMAT_VERSION,
  isSchemaId,
  MSG_ID_HEADER,
  SCHEMA_HEADER,
} from './change-format.js';

/** One message of a change stream, decoded. */
export interface ChangeMessage {
  /** Its stream sequence: the position a follower stores once it has applied the message. */
  readonly seq: number;
  /** Its `Nats-Msg-Id`, or undefined when the producer sent none. */
  readonly msgId: string | undefined;
  /** The schema id of its values. */
  readonly schema: string;
  /** Its changes, in the order they apply (the last change of a key wins). */
  readonly changes: WriteOp[];
}

/** The headers of a publish: format version, schema id and message id. */
export function changeHeaders(schema: string, msgId: string): MsgHdrs {
  const h = natsHeaders();
  h.set(FORMAT_HEADER, String(FORMAT_VERSION));
  h.set(SCHEMA_HEADER, schema);
  h.set(MSG_ID_HEADER, msgId);
  return h;
}

/** What {@link readChangeMessage} checks a received message against. */
export interface ReadOptions {
  /** The schema id the reader follows; a message of another is SCHEMA_MISMATCH. Undefined accepts any. */
  readonly schema?: string | undefined;
  readonly limits?: ChangeLimits;
}

/**
 * Reads the message stored at `seq`. Header names match without regard to case (producers in other languages
 * may send them in lower case). Throws BAD_HEADER (a header missing, repeated or ill-formed), UNSUPPORTED_FORMAT,
 * SCHEMA_MISMATCH, and the payload errors of `decodeChanges`; every message names the sequence.
 */
export function readChangeMessage(
  seq: number,
  headers: MsgHdrs | undefined,
  payload: Uint8Array,
  options: ReadOptions = {},
): ChangeMessage {
  const format = single(seq, headers, FORMAT_HEADER);
  // The documented spelling only: `01` or `+1` would be read as 1 by one producer's parser and refused by another's.
  if (!/^(0|[1-9][0-9]{0,8})$/.test(format))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
      `message ${seq}: ${FORMAT_HEADER} is not a version number: '${format}'`,
    );
  if (Number(format) !== FORMAT_VERSION)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_UNSUPPORTED_FORMAT',
      `message ${seq}: format ${format}, this version reads format ${FORMAT_VERSION}`,
    );
  const schema = single(seq, headers, SCHEMA_HEADER);
  if (!isSchemaId(schema))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
      `message ${seq}: ${SCHEMA_HEADER} is not a schema id: '${schema}'`,
    );
  if (options.schema !== undefined && schema !== options.schema)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH',
      `message ${seq} has schema '${schema}', this reader follows '${options.schema}'`,
    );
  const ids = headers?.values(MSG_ID_HEADER, Match.IgnoreCase) ?? [];
  let changes: WriteOp[];
  try {
    changes = decodeChanges(payload, options.limits ?? DEFAULT_CHANGE_LIMITS);
  } catch (err) {
    if (err instanceof ReplicaError) throw new ReplicaError(err.code, `message ${seq}: ${err.message}`);
    throw err;
  }
  return { seq, msgId: ids[0], schema, changes };
}

/** The one value of header `name`; BAD_HEADER when it is missing or repeated. */
function single(seq: number, headers: MsgHdrs | undefined, name: string): string {
  const values = headers?.values(name, Match.IgnoreCase) ?? [];
  if (values.length !== 1)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
      values.length === 0
        ? `message ${seq}: no ${name} header`
        : `message ${seq}: ${values.length} ${name} headers, one is expected`,
    );
  // nats.js drops the spaces around a value (header syntax, as in HTTP) when it parses or builds headers.
  return values[0]!;
}
