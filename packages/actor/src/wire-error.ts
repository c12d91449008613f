import { ERROR_CODES, type ErrorCode, HeaplessError, isErrorCode } from '@heapless/client/protocol';

/**
 * The code and message a remote caller sees for an error thrown by an actor or the server: a `HeaplessError` (or any
 * error whose `code` is in the wire table) keeps its code; anything else is `ACTOR_ERROR` with the error's message
 * (never its stack).
 */
export function wireCodeOf(e: unknown): ErrorCode {
  if (e instanceof HeaplessError) return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  return isErrorCode(code) ? code : 'ACTOR_ERROR';
}

/** The message sent with an error. */
export function wireMessageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The HTTP body of an error: `{ code, wire, message }` (FORMAT.md). */
export function errorBody(code: ErrorCode, message: string): { code: ErrorCode; wire: number; message: string } {
  return { code, wire: ERROR_CODES[code].wire, message };
}
