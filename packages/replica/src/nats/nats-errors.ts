/**
 * What the NATS client raised, in this package's codes. An error that means "NATS could not be reached or did not
 * answer" (a timeout, a closed or refused connection, no responder on a JetStream subject, JetStream disabled) is
 * UNAVAILABLE, which callers may retry; a missing stream is STREAM_NOT_FOUND; a local file that could not be read or
 * written (a checkpoint's, on this machine) is LOCAL_IO; any other refusal is NATS_ERROR. The original error is
 * always the `cause`.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  TimeoutError,
} from '@nats-io/nats-core';
import { ReplicaError } from '../errors.js';

/** `err` as a {@link ReplicaError} whose message starts with `context` (a ReplicaError passes unchanged). */
export function replicaErrorOf(err: unknown, context: string): ReplicaError {
  if (err instanceof ReplicaError) return err;
  const text = `${context}: ${err instanceof Error ? err.message : String(err)}`;
  if (isUnavailable(err)) return new ReplicaError('HEAPLESS_ERR_REPLICA_UNAVAILABLE', text, { cause: err });
  if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)
    return new ReplicaError('HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND', text, { cause: err });
  if (isLocalFileError(err)) return new ReplicaError('HEAPLESS_ERR_REPLICA_LOCAL_IO', text, { cause: err });
  return new ReplicaError('HEAPLESS_ERR_REPLICA_NATS_ERROR', text, { cause: err });
}

/** System calls on files only (a socket's errors come from connect, read, write and the like). */
const FILE_CALLS = new Set([
  'open',
  'close',
  'fsync',
  'fdatasync',
  'ftruncate',
  'rename',
  'mkdir',
  'rmdir',
  'unlink',
  'scandir',
  'stat',
  'lstat',
  'fstat',
  'rm',
]);
/** Errors of a read or write that only a file gives (a full or read-only disk, an I/O error). */
const FILE_ERRNOS = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'EROFS', 'EIO', 'EISDIR', 'EBADF']);

/** Whether `err` is Node's error of a system call on a local file (it carries `syscall` and `code`). */
function isLocalFileError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { syscall, code } = err as NodeJS.ErrnoException;
  if (typeof syscall !== 'string' || typeof code !== 'string') return false;
  return FILE_CALLS.has(syscall) || ((syscall === 'read' || syscall === 'write') && FILE_ERRNOS.has(code));
}

/** Whether `err`, or an error in its `cause` chain, says that NATS was unreachable or did not answer. */
export function isUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (
      e instanceof TimeoutError ||
      e instanceof ClosedConnectionError ||
      e instanceof DrainingConnectionError ||
      e instanceof ConnectionError ||
      e instanceof NoRespondersError
    )
      return true;
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.JetStreamNotEnabledForAccount) return true;
    // nats-core's connect() rejects a refused first connection with a plain Error carrying the socket's code.
    const code = (e as { code?: unknown }).code;
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH')
      return true;
  }
  return false;
}

/** Whether `err` is JetStream's "no such message" answer (a direct get of a deleted or purged sequence). */
export function isMessageNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound;
}
