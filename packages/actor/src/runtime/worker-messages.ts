import { HeaplessError, isErrorCode } from '@heapless/client/protocol';

/**
 * Messages between a worker actor and its parent (structured clone, not msgpack). Calls and replies are batched:
 * one postMessage per tick each way, however many calls it carries.
 *
 *   parent → worker: { t: 'calls', c: [id, method, args][] } | { t: 'stop', drain }
 *   worker → parent: { t: 'ready', methods, exposed } | { t: 'failed', e } | { t: 'replies', r: Reply[] }
 *                    | { t: 'stopped', e? }
 *   Reply = [id, 1, value] | [id, 0, SerializedError]
 */
export type ToWorker = { t: 'calls'; c: [number, string, unknown[]][] } | { t: 'stop'; drain: boolean };
export type FromWorker =
  | { t: 'ready'; methods: string[]; exposed: string[] }
  | { t: 'failed'; e: SerializedError }
  | { t: 'replies'; r: [number, 0 | 1, unknown][] }
  | { t: 'stopped'; e?: SerializedError };

/** An error as it crosses the thread boundary: the heapless code survives, the rest becomes the message. */
export interface SerializedError {
  code?: string;
  name: string;
  message: string;
}

export function serializeError(e: unknown): SerializedError {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return { code: typeof code === 'string' ? code : undefined, name: e.name, message: e.message };
  }
  return { name: 'Error', message: String(e) };
}

/**
 * A `HeaplessError` again when it was one in the worker, else a plain `Error` with the same name, message and code
 * (so that an engine or map error thrown in the worker keeps its package's code, which the wire table maps). A
 * plain error whose code is spelled like a wire code stays a plain error: the wire never takes a code from its
 * spelling.
 */
export function deserializeError(s: SerializedError): Error {
  if (s.name === 'HeaplessError' && isErrorCode(s.code)) return new HeaplessError(s.code, s.message);
  const e = new Error(s.message) as Error & { code?: string };
  e.name = s.name;
  if (s.code !== undefined) e.code = s.code;
  return e;
}
