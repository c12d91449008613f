import { HeaplessError } from '@heapless/client/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Packr } from 'msgpackr';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { type HttpReplier, MSGPACK, unpackBody, wantsMsgpack } from '../server/http-reply.js';
import type { ScanPage } from './kv-actor.js';
import { watchRoute } from './kv-watch-sse.js';

const OCTETS = 'application/octet-stream';

/** A JSON body, parsed; msgpack and raw bodies stay Buffers so that a PUT stores them as they came. */
interface JsonBody {
  json: unknown;
}

function isJsonBody(b: unknown): b is JsonBody {
  return typeof b === 'object' && b !== null && !Buffer.isBuffer(b) && 'json' in b;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The query of `url`, each name and value decoded strictly (`+` is a space): an escape that is not valid UTF-8
 * (`%FF`, a lone surrogate's `%ED%A0%80`, a stray `%`) is refused with BAD_URL, where fastify's parser keeps it
 * as text and a lenient decoder would replace it (either way `?prefix=%FF` would name another prefix). A name given
 * twice is BAD_ARGUMENTS.
 */
export function strictQuery(url: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const at = url.indexOf('?');
  if (at < 0) return out;
  for (const part of url.slice(at + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decodeQueryPart(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : decodeQueryPart(part.slice(eq + 1));
    if (Object.hasOwn(out, name)) throw new HeaplessError('BAD_ARGUMENTS', `query parameter ${name} given twice`);
    out[name] = value;
  }
  return out;
}

function decodeQueryPart(s: string): string {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '));
  } catch {
    throw new HeaplessError('BAD_URL', `query ${JSON.stringify(s)} is not valid percent-encoded UTF-8`);
  }
}

/**
 * The KV actor's HTTP routes, for people and tools (the typed client uses the WebSocket):
 *
 * - `GET /v1/kv/:key`: the value; the stored bytes as they are for `accept: application/msgpack` or
 *   `application/octet-stream`, else decoded from msgpack to JSON. 404 `NOT_FOUND` when missing.
 * - `PUT /v1/kv/:key[?sync=1]`: a msgpack or `application/octet-stream` body is stored as it is; a JSON body is
 *   encoded to msgpack once. 204 once durable.
 * - `DELETE /v1/kv/:key[?sync=1]`: `{ deleted }`.
 * - `POST /v1/kv/_getMany` with a keys array: the values in order (null where missing).
 * - `POST /v1/kv/_checkpoint` with `{ name }`: a live checkpoint under the server's checkpoint root (see
 *   `KvActor.checkpoint`); `{ dir, imageSequence, ms }` once complete.
 * - `GET /v1/kv?prefix=&gte=&lt=&limit=&cursor=`: one page of `{ entries: [[key, value]], cursor }`; the query is
 *   decoded strictly (see `strictQuery`).
 * - `POST /v1/kv/_batch[?sync=1]` with `{ ops: [{ type: 'set', key, value } | { type: 'delete', key }], meta: { name:
 *   value | null } }`: one atomic batch (the actor's `batch`); `{ sequence }` once durable. In a JSON body every
 *   value is encoded to msgpack once; in a msgpack body values are bytes (bin), stored as they are.
 * - `GET`, `PUT[?sync=1]`, `DELETE[?sync=1] /v1/kv/_meta/:name`: named metadata, with the bodies and answers of the
 *   key routes (`GET` is 404 `NOT_FOUND` for a name without a value; `PUT` and `DELETE` answer `{ sequence }`).
 * - `GET /v1/watch?prefix=&fromSequence=`: the changes under a prefix as Server-Sent Events (kv-watch-sse.ts).
 */
export function kvRoutes(scope: FastifyInstance, handle: ActorHandle, replier: HttpReplier): void {
  const packr = replier.packr;
  const decoder = replier.decoder;
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser([MSGPACK, OCTETS], { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, { json: JSON.parse(body as string) } satisfies JsonBody);
    } catch (cause) {
      done(new HeaplessError('BAD_FRAME', 'body is not JSON', { cause }), undefined);
    }
  });

  /** A decoded body: JSON as parsed, msgpack unpacked. */
  const bodyValue = (req: FastifyRequest): unknown => {
    const b = req.body;
    if (isJsonBody(b)) return b.json;
    if (Buffer.isBuffer(b) && (req.headers['content-type'] ?? '').startsWith(MSGPACK)) return unpackBody(decoder, b);
    throw new HeaplessError('BAD_REQUEST', 'a JSON or msgpack body is needed');
  };
  /** A stored value as JSON can carry it: decoded from msgpack. */
  const decoded = (bytes: Uint8Array | undefined): unknown => {
    if (bytes === undefined || bytes === null) return null;
    try {
      return decoder.unpack(bytes);
    } catch (cause) {
      throw new HeaplessError('UNSUPPORTED_MEDIA_TYPE', `the value is not msgpack: ask for ${OCTETS}`, { cause });
    }
  };
  const syncOf = (req: FastifyRequest) => {
    const s = (req.query as { sync?: string }).sync;
    return s === '1' || s === 'true';
  };
  const keyOf = (req: FastifyRequest) => (req.params as { key: string }).key;
  const nameOf = (req: FastifyRequest) => (req.params as { name: string }).name;
  /** A PUT's body as the bytes to store: msgpack or octets as they came, JSON encoded to msgpack once. */
  const storedBytes = (req: FastifyRequest): Uint8Array => {
    const b = req.body;
    if (Buffer.isBuffer(b)) return b;
    if (isJsonBody(b)) return packr.pack(b.json);
    throw new HeaplessError('BAD_REQUEST', 'a JSON, msgpack or octet-stream body is needed');
  };
  /** Answers a GET of stored bytes in the type `accept` asks for. */
  const sendStored = (req: FastifyRequest, reply: FastifyReply, bytes: Uint8Array) => {
    const accept = req.headers.accept ?? '';
    if (accept.includes(OCTETS)) return reply.type(OCTETS).send(asBuffer(bytes));
    if (accept.includes(MSGPACK)) return reply.type(MSGPACK).send(asBuffer(bytes));
    return sendJson(reply, decoded(bytes));
  };
  const sendJson = (reply: FastifyReply, value: unknown) =>
    reply.type('application/json; charset=utf-8').send(JSON.stringify(value));

  watchRoute(scope, handle, replier);

  scope.get('/v1/kv/:key', async (req, reply) => {
    const key = keyOf(req);
    const bytes = (await handle.call('get', [key])) as Uint8Array | undefined;
    if (bytes === undefined) return replier.error(req, reply, 'NOT_FOUND', `no value under ${key}`);
    return sendStored(req, reply, bytes);
  });

  scope.put('/v1/kv/:key', async (req, reply) => {
    await handle.call('set', [keyOf(req), storedBytes(req), { sync: syncOf(req) }]);
    return reply.code(204).send();
  });

  scope.post('/v1/kv/_batch', async (req, reply) => {
    const body = bodyValue(req) as { ops?: unknown; meta?: unknown } | null;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HeaplessError('BAD_ARGUMENTS', 'a batch body is { ops: [...], meta?: { name: value | null } }');
    }
    const json = isJsonBody(req.body);
    const ops = json ? packValues(packr, body.ops) : body.ops;
    const meta = json ? packMeta(packr, body.meta) : body.meta;
    const result = await handle.call('batch', [ops, { meta, sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.get('/v1/kv/_meta/:name', async (req, reply) => {
    const name = nameOf(req);
    const bytes = (await handle.call('getMeta', [name])) as Uint8Array | undefined;
    if (bytes === undefined) return replier.error(req, reply, 'NOT_FOUND', `no metadata named ${name}`);
    return sendStored(req, reply, bytes);
  });

  scope.put('/v1/kv/_meta/:name', async (req, reply) => {
    const result = await handle.call('setMeta', [nameOf(req), storedBytes(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.delete('/v1/kv/_meta/:name', async (req, reply) => {
    const result = await handle.call('deleteMeta', [nameOf(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.delete('/v1/kv/:key', async (req, reply) => {
    const deleted = await handle.call('delete', [keyOf(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, { deleted });
  });

  scope.post('/v1/kv/_getMany', async (req, reply) => {
    const values = (await handle.call('getMany', [bodyValue(req)])) as (Uint8Array | undefined)[];
    if (wantsMsgpack(req)) return replier.value(req, reply, 200, values);
    return sendJson(reply, values.map(decoded));
  });

  scope.post('/v1/kv/_checkpoint', async (req, reply) => {
    const body = bodyValue(req) as { name?: unknown } | null;
    const result = await handle.call('checkpoint', [body?.name]);
    return replier.value(req, reply, 200, result);
  });

  scope.get('/v1/kv', async (req, reply) => {
    const q = strictQuery(req.url);
    const limit = q.limit === undefined ? undefined : Number(q.limit);
    const page = (await handle.call('scan', [
      { prefix: q.prefix, gte: q.gte, lt: q.lt, cursor: q.cursor, limit },
    ])) as ScanPage;
    if (wantsMsgpack(req)) return replier.value(req, reply, 200, page);
    return sendJson(reply, { entries: page.entries.map(([k, v]) => [k, decoded(v)]), cursor: page.cursor ?? null });
  });
}

/** A JSON batch's ops with each `value` encoded to msgpack once; anything not of the shape is left for the actor. */
function packValues(packr: Packr, ops: unknown): unknown {
  if (!Array.isArray(ops)) return ops;
  return ops.map((op: unknown) =>
    typeof op === 'object' && op !== null && 'value' in op ? { ...op, value: packr.pack(op.value) } : op,
  );
}

/** A JSON batch's metadata with each value but null encoded to msgpack once. */
function packMeta(packr: Packr, meta: unknown): unknown {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return meta;
  const out: Record<string, Uint8Array | null> = Object.create(null);
  for (const [name, v] of Object.entries(meta)) out[name] = v === null ? null : packr.pack(v);
  return out;
}
