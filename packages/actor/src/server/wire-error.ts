import { ERROR_CODES, type ErrorCode, HeaplessError, isErrorCode } from '@heapless/client/protocol';
import { type ErrorCode as EngineErrorCode, ErrorCodes as EngineErrorCodes } from '@heapless/engine';
import { type OffHeapErrorCode, OffHeapErrorCodes } from '@heapless/offheap';

/**
 * The wire code of every code the storage packages throw, so that a client can tell a damaged disk from a full one
 * and from a bug. `satisfies` makes a code added to either table without a wire code here a compile error (and the
 * test of this table a failure).
 *
 * Codes that a KV actor's call cannot meet (they only arise opening a store, or from APIs it does not use) map to
 * `INTERNAL`: if one ever reaches a caller, it is a fault of the server, not of the request.
 */
export const STORAGE_WIRE_CODES = {
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
} as const satisfies Record<EngineErrorCode | OffHeapErrorCode, ErrorCode>;

/** The wire code of an error of the engine's or the map's table, or undefined for any other error. */
export function storageWireCode(e: unknown): ErrorCode | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && Object.hasOwn(STORAGE_WIRE_CODES, code)
    ? STORAGE_WIRE_CODES[code as keyof typeof STORAGE_WIRE_CODES]
    : undefined;
}

/**
 * The code and message a remote caller sees for an error thrown by an actor or the server: a `HeaplessError` (or any
 * error whose `code` is in the wire table) keeps its code; an error of the engine's or the map's table gets its
 * storage code ({@link STORAGE_WIRE_CODES}); anything else is `ACTOR_ERROR` with the error's message (never its
 * stack).
 */
export function wireCodeOf(e: unknown): ErrorCode {
  if (e instanceof HeaplessError) return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  if (isErrorCode(code)) return code;
  return storageWireCode(e) ?? 'ACTOR_ERROR';
}

/** The message sent with an error. */
export function wireMessageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The HTTP body of an error: `{ code, wire, message }` (FORMAT.md). */
export function errorBody(code: ErrorCode, message: string): { code: ErrorCode; wire: number; message: string } {
  return { code, wire: ERROR_CODES[code].wire, message };
}
