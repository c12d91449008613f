import { ERROR_CODES, type ErrorCode, HeaplessError } from '@heapless/client/protocol';
import { type ErrorCode as EngineErrorCode, ErrorCodes as EngineErrorCodes } from '@heapless/engine';
import { type OffHeapErrorCode, OffHeapErrorCodes } from '@heapless/offheap';
import { type ReplicaErrorCode, ReplicaErrorCodes } from '@heapless/replica';
import { type ActorErrorCode, ActorErrorCodes } from '../errors.js';

/** A code of the table of one of the packages whose errors can reach a client: engine, map, replica or actor. */
export type PackageErrorCode = EngineErrorCode | OffHeapErrorCode | ReplicaErrorCode | ActorErrorCode;

/**
 * The wire code of every code of every package's table, so that a client can tell a damaged disk from a full one,
 * from a change log it cannot reach and from a bug. `satisfies` makes a code added to any table without a wire code
 * here a compile error (and wire-error.test.ts, which walks each table at run time, a failure). This table is the
 * only way a package's code becomes a wire code: a wire code is never taken from how a code is spelled.
 *
 * Codes that a call cannot meet (they only arise opening a store or a server, or from APIs the KV actor does not use)
 * map to `INTERNAL`: if one ever reaches a caller, it is a fault of the server, not of the request.
 */
export const WIRE_CODES = {
  [EngineErrorCodes.CORRUPTION]: 'STORAGE_CORRUPTION',
  [EngineErrorCodes.IO]: 'STORAGE_IO',
  [EngineErrorCodes.CLOSED]: 'STORAGE_CLOSED',
  [EngineErrorCodes.LOCKED]: 'STORAGE_LOCKED',
  [EngineErrorCodes.INVALID_ARGUMENT]: 'BAD_ARGUMENTS',
  [EngineErrorCodes.NOT_FOUND]: 'INTERNAL', // no database in the directory: only at open
  [EngineErrorCodes.EXISTS]: 'INTERNAL', // a database where none may be: only at open
  [EngineErrorCodes.UNSUPPORTED]: 'INTERNAL', // a codec this runtime lacks: at open, or the server's platform
  [EngineErrorCodes.READ_ONLY]: 'INTERNAL', // the KV actor opens its engine for writing
  [OffHeapErrorCodes.INVALID_ARGUMENT]: 'BAD_ARGUMENTS',
  [OffHeapErrorCodes.KEY_TOO_LARGE]: 'KEY_TOO_LARGE',
  [OffHeapErrorCodes.VALUE_TOO_LARGE]: 'VALUE_TOO_LARGE',
  [OffHeapErrorCodes.FIELD_OVERFLOW]: 'BAD_ARGUMENTS',
  [OffHeapErrorCodes.ENCODE_FAILED]: 'BAD_ARGUMENTS',
  [OffHeapErrorCodes.DECODE_FAILED]: 'INTERNAL', // the KV actor never decodes a value
  [OffHeapErrorCodes.CLOSED]: 'STORAGE_CLOSED',
  [OffHeapErrorCodes.READ_ONLY]: 'INTERNAL', // the KV actor owns its map
  [OffHeapErrorCodes.VIEW_NOT_POSITIONED]: 'INTERNAL', // nor does it use views
  [OffHeapErrorCodes.PERSIST_FAILED]: 'STORAGE_PERSIST_FAILED',
  [OffHeapErrorCodes.INCOMPATIBLE]: 'INTERNAL', // only at open
  [OffHeapErrorCodes.WORKER_FAILED]: 'INTERNAL', // parallel scans: not a KV actor call
  [OffHeapErrorCodes.VERSION_MISMATCH]: 'INTERNAL', // the KV actor makes no checked write (yet)
  [OffHeapErrorCodes.NOT_AN_INTEGER]: 'INTERNAL', // nor calls incr (yet)
  [OffHeapErrorCodes.COUNTER_OVERFLOW]: 'INTERNAL', // nor calls incr (yet)
  // A write through a following server's change log: what is wrong with the write itself keeps its meaning...
  [ReplicaErrorCodes.KEY_TOO_LARGE]: 'KEY_TOO_LARGE',
  [ReplicaErrorCodes.VALUE_TOO_LARGE]: 'VALUE_TOO_LARGE',
  [ReplicaErrorCodes.TOO_MANY_CHANGES]: 'BATCH_TOO_LARGE', // more operations than one change message holds
  [ReplicaErrorCodes.MESSAGE_TOO_LARGE]: 'BATCH_TOO_LARGE', // a write larger than the NATS server takes
  [ReplicaErrorCodes.INVALID_KEY]: 'BAD_ARGUMENTS', // a lone surrogate (the KV actor's own check sees it first)
  // ...and the log not reachable, refusing, closed, or no longer followed is the log unavailable: retry later.
  [ReplicaErrorCodes.UNAVAILABLE]: 'UNAVAILABLE',
  [ReplicaErrorCodes.NATS_ERROR]: 'UNAVAILABLE',
  [ReplicaErrorCodes.CLOSED]: 'UNAVAILABLE',
  [ReplicaErrorCodes.STREAM_NOT_FOUND]: 'UNAVAILABLE',
  [ReplicaErrorCodes.STREAM_MISMATCH]: 'UNAVAILABLE',
  [ReplicaErrorCodes.POSITION_PURGED]: 'UNAVAILABLE',
  [ReplicaErrorCodes.POSITION_AHEAD]: 'UNAVAILABLE',
  [ReplicaErrorCodes.SEQUENCE_GAP]: 'UNAVAILABLE',
  [ReplicaErrorCodes.SCHEMA_MISMATCH]: 'UNAVAILABLE',
  [ReplicaErrorCodes.MALFORMED_MESSAGE]: 'UNAVAILABLE',
  [ReplicaErrorCodes.BAD_HEADER]: 'UNAVAILABLE',
  [ReplicaErrorCodes.UNSUPPORTED_FORMAT]: 'UNAVAILABLE',
  [ReplicaErrorCodes.INVALID_ARGUMENT]: 'INTERNAL', // a replica option or name: only at open
  [ReplicaErrorCodes.CHECKPOINT_NOT_FOUND]: 'INTERNAL', // checkpoints: at open, or the checkpoint command
  [ReplicaErrorCodes.CHECKPOINT_CORRUPT]: 'INTERNAL',
  [ReplicaErrorCodes.LOCAL_IO]: 'INTERNAL',
  // Setting up (publish, spawn, the command): never a call's.
  [ActorErrorCodes.INSECURE_BIND]: 'INTERNAL',
  [ActorErrorCodes.INVALID_OPTION]: 'INTERNAL',
  [ActorErrorCodes.NOT_A_METHOD]: 'INTERNAL',
  [ActorErrorCodes.WORKER_START]: 'INTERNAL',
  [ActorErrorCodes.USAGE]: 'INTERNAL',
} as const satisfies Record<PackageErrorCode, ErrorCode>;

/** The prefix every package's codes share (`HEAPLESS_ERR_<PACKAGE>_<NAME>`). */
const PACKAGE_CODE_PREFIX = 'HEAPLESS_ERR_';

/**
 * The wire code of an error whose `code` is in a package's table ({@link WIRE_CODES}), or undefined for any other
 * error (a `HeaplessError` included: its code is already the wire's).
 */
export function packageWireCode(e: unknown): ErrorCode | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && Object.hasOwn(WIRE_CODES, code) ? WIRE_CODES[code as PackageErrorCode] : undefined;
}

/**
 * The code a remote caller sees for an error thrown by an actor or the server: a `HeaplessError` keeps its code; an
 * error of a package's table gets the code {@link WIRE_CODES} gives it; one whose code looks like a package's but is
 * in no table (`HEAPLESS_ERR_...`: a table out of step with this one) is `INTERNAL`, which the caller logs as a
 * fault of the server; anything else (no code, or another library's, such as `ENOENT`) is `ACTOR_ERROR`, sent with
 * the error's message (never its stack).
 */
export function wireCodeOf(e: unknown): ErrorCode {
  if (e instanceof HeaplessError) return e.code;
  const wire = packageWireCode(e);
  if (wire !== undefined) return wire;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith(PACKAGE_CODE_PREFIX) ? 'INTERNAL' : 'ACTOR_ERROR';
}

/** The message sent with an error. */
export function wireMessageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The HTTP body of an error: `{ code, wire, message }` (FORMAT.md). */
export function errorBody(code: ErrorCode, message: string): { code: ErrorCode; wire: number; message: string } {
  return { code, wire: ERROR_CODES[code].wire, message };
}
