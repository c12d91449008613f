import { Packr } from 'msgpackr';
import { codeFromWire, type ErrorCode, isErrorCode } from '../protocol/error-codes.js';
import { HeaplessError } from '../protocol/heapless-error.js';
import { illFormedArguments } from '../protocol/ill-formed.js';
import { MsgpackDecoder } from '../protocol/msgpack-decoder.js';
import { MSGPACK_OPTIONS } from '../protocol/msgpack-options.js';
import { remoteRef } from './remote-ref.js';
import type { Remote } from './remote-types.js';

/** Options of {@link httpClient}. */
export interface HttpClientOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Each call rejects with `TIMEOUT` after this long; 0 = never. Default 30 s. */
  timeoutMs?: number;
  /** The fetch to use; default the global one. */
  fetch?: typeof fetch;
}

const MSGPACK = 'application/msgpack';

/**
 * A typed ref over HTTP: each call is one `POST {baseUrl}/v1/call/{method}` with the args array as a msgpack body,
 * answered with the msgpack result, or an error status with `{ code, wire, message }`. No connection is held, so
 * `close()` only stops further calls.
 */
export function httpClient<T>(baseUrl: string, opts: HttpClientOptions = {}): Remote<T> {
  const base = baseUrl.replace(/\/+$/, '');
  const packr = new Packr(MSGPACK_OPTIONS);
  const decoder = new MsgpackDecoder();
  const doFetch = opts.fetch ?? fetch;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const headers: Record<string, string> = { 'content-type': MSGPACK, accept: MSGPACK };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let closed = false;

  async function call(method: string, args: unknown[]): Promise<unknown> {
    if (closed) throw new HeaplessError('CLIENT_CLOSED');
    const request = packr.pack(args);
    const illFormed = illFormedArguments(method, request, args);
    if (illFormed !== undefined) throw illFormed;
    let res: Response;
    try {
      res = await doFetch(`${base}/v1/call/${encodeURIComponent(method)}`, {
        method: 'POST',
        headers,
        body: request,
        signal: timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined,
      });
    } catch (cause) {
      if ((cause as Error)?.name === 'TimeoutError') {
        throw new HeaplessError('TIMEOUT', `no reply within ${timeoutMs} ms`, { cause });
      }
      throw new HeaplessError('CONNECTION_LOST', `POST ${base}/v1/call/${method} failed`, { cause });
    }
    const body = new Uint8Array(await res.arrayBuffer());
    const isMsgpack = (res.headers.get('content-type') ?? '').startsWith(MSGPACK);
    let value: unknown;
    try {
      value =
        body.length === 0 ? undefined : isMsgpack ? decoder.unpack(body) : JSON.parse(new TextDecoder().decode(body));
    } catch (cause) {
      throw new HeaplessError('BAD_FRAME', `reply to ${method} is not ${isMsgpack ? 'msgpack' : 'JSON'}`, { cause });
    }
    if (res.ok) return value;
    throw errorFromBody(value, res.status);
  }

  return remoteRef<Remote<T>>({
    call,
    close: async () => {
      closed = true;
    },
    url: base,
    methods: null, // no hello over HTTP: any name that can be an actor method is a call
  });
}

function errorFromBody(body: unknown, status: number): HeaplessError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    code?: unknown;
    wire?: unknown;
    message?: unknown;
  };
  const code: ErrorCode = isErrorCode(b.code) ? b.code : typeof b.wire === 'number' ? codeFromWire(b.wire) : 'INTERNAL';
  return new HeaplessError(code, typeof b.message === 'string' ? b.message : `HTTP ${status}`);
}
