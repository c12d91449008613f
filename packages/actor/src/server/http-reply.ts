import { ERROR_CODES, type ErrorCode, HeaplessError, MSGPACK_OPTIONS, MsgpackDecoder } from '@heapless/client/protocol';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { C1, Packr } from 'msgpackr';
import { errorBody } from './wire-error.js';

export const MSGPACK = 'application/msgpack';
export const JSON_TYPE = 'application/json';
export const OCTETS = 'application/octet-stream';

/** Whether the request asks for msgpack answers (`accept` names application/msgpack). */
export function wantsMsgpack(req: FastifyRequest): boolean {
  return (req.headers.accept ?? '').includes(MSGPACK);
}

/**
 * Answers HTTP requests in the type they ask for: msgpack when `accept` names it, JSON otherwise (`undefined` as
 * `null`, bytes as `{ "bytes": "<base64>" }`, the form every JSON answer gives bytes). One encoder and one decoder
 * (of bodies and stored values; it renames no map key) per server.
 */
export class HttpReplier {
  readonly packr = new Packr(MSGPACK_OPTIONS);
  readonly decoder = new MsgpackDecoder();

  value(req: FastifyRequest, reply: FastifyReply, status: number, value: unknown): FastifyReply {
    reply.code(status);
    if (wantsMsgpack(req)) return reply.type(MSGPACK).send(this.packr.pack(value));
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(value ?? null, bytesAsBase64));
  }

  error(req: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string): FastifyReply {
    return this.value(req, reply, ERROR_CODES[code].status, errorBody(code, message));
  }
}

/** A `JSON.stringify` replacer: bytes (before Buffer's `toJSON`, `{ type: 'Buffer', data }`) as `{ bytes }`. */
function bytesAsBase64(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (!(raw instanceof Uint8Array)) return value;
  return { bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') };
}

/**
 * JSON call arguments with bytes in the form answers give them: every object whose only own key is `bytes`, a
 * string in canonical base64, becomes those bytes (a `Buffer`), at any depth, so that what a JSON answer gave
 * can be sent back (`set(key, value)` of a value read with `get`). Any other object is left as it is. Walks with
 * its own stack, so that the deepest body the size limit lets through cannot overflow the call stack.
 */
export function bytesFromBase64(args: unknown[]): unknown[] {
  const stack: (Record<string, unknown> | unknown[])[] = [args];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    for (const key of Object.keys(node)) {
      const child = (node as Record<string, unknown>)[key];
      if (child === null || typeof child !== 'object') continue;
      const bytes = base64Bytes(child);
      if (bytes !== undefined) (node as Record<string, unknown>)[key] = bytes;
      else stack.push(child as Record<string, unknown>);
    }
  }
  return args;
}

/** The bytes of `{ bytes: "<canonical base64>" }`, else undefined. */
function base64Bytes(value: object): Buffer | undefined {
  if (Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== 'bytes') return undefined;
  const text = (value as { bytes: unknown }).bytes;
  if (typeof text !== 'string') return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

/** Whether the request's body is JSON (its content-type says so). */
export function bodyIsJson(req: FastifyRequest): boolean {
  return bodyType(req) === JSON_TYPE;
}

/** A request's body media type, lower case and without parameters; '' when it names none. */
function bodyType(req: FastifyRequest): string {
  return (req.headers['content-type'] ?? '').split(';', 1)[0].trim().toLowerCase();
}

/**
 * A route's `preParsing` hook that takes bodies of `types` only (none when empty): a content-type not of `types`
 * (fastify parses by it even an empty body), or a body without one, is `415 UNSUPPORTED_MEDIA_TYPE` whose message
 * and `Accept` header list `types`, so that fastify's own 415, which names none, is never reached.
 */
export function takesBodies(types: readonly string[]): preParsingHookHandler {
  const list = types.join(', ');
  return (req, reply, payload, done) => {
    const type = bodyType(req);
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (type === '' ? !hasBody : types.includes(type)) {
      done(null, payload);
      return;
    }
    if (types.length === 0) {
      const route = `${req.method} ${req.routeOptions.url}`;
      done(new HeaplessError('UNSUPPORTED_MEDIA_TYPE', `${route} takes no body (and no content-type)`));
      return;
    }
    const what = type === '' ? 'a body without a content-type' : `content-type ${type}`;
    reply.header('accept', list);
    done(new HeaplessError('UNSUPPORTED_MEDIA_TYPE', `${what} is not taken here; send ${list}`));
  };
}

/**
 * `bytes` decoded as one msgpack value, every map key as sent (`__proto__` too, as an own property). Throws
 * `BAD_FRAME` when they are not msgpack: msgpackr refuses them (truncated, trailing bytes, an unknown extension), a
 * map key has no string form, or they hold the byte 0xc1 as a value, which msgpack never uses and msgpackr decodes
 * to a marker object instead of failing.
 */
export function unpackBody(decoder: MsgpackDecoder, bytes: Uint8Array): unknown {
  let value: unknown;
  try {
    value = decoder.unpack(bytes);
  } catch (cause) {
    throw new HeaplessError('BAD_FRAME', 'body is not msgpack', { cause });
  }
  if (holdsNeverUsed(value)) {
    throw new HeaplessError('BAD_FRAME', 'body is not msgpack: it holds 0xc1, a byte msgpack never uses');
  }
  return value;
}

/** Whether msgpackr's 0xc1 marker is anywhere in `value` (arrays, maps and objects walked without recursion). */
function holdsNeverUsed(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === C1) return true;
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) continue;
    if (Array.isArray(v)) stack.push(...v);
    else if (v instanceof Map) for (const [k, x] of v) stack.push(k, x);
    else stack.push(...Object.values(v));
  }
  return false;
}

/** The wire code of an error the router raises before any route runs (fastify's `frameworkErrors`). */
export function routerErrorCode(e: { code?: unknown }): ErrorCode {
  if (e.code === 'FST_ERR_BAD_URL') return 'BAD_URL';
  if (e.code === 'FST_ERR_MAX_PARAM_LENGTH') return 'URL_TOO_LONG';
  return 'BAD_REQUEST';
}

/** Whether a `Sec-WebSocket-Protocol` header (comma-separated names) offers `protocol`. */
export function offersProtocol(header: string | undefined, protocol: string): boolean {
  return header?.split(',').some((p) => p.trim() === protocol) ?? false;
}

/** A raw HTTP response refusing an upgrade with `status` and the error body of `code`, then closing. */
export function upgradeRefusal(status: string, code: ErrorCode, message: string): string {
  const body = JSON.stringify(errorBody(code, message));
  return `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
