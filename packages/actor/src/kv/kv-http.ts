import { HeaplessError } from '@heapless/client/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Packr } from 'msgpackr';
import type { ActorHandle } from '../runtime/actor-handle.js';
import {
  type HttpReplier,
  JSON_TYPE,
  MSGPACK,
  OCTETS,
  takesBodies,
  unpackBody,
  wantsMsgpack,
} from '../server/http-reply.js';
import { exactJson, withValueJson } from './change-json.js';
import type { ScanPage } from './kv-actor.js';
import { watchRoute } from './kv-watch-sse.js';
import { strictQuery } from './strict-query.js';

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
 * The KV actor's HTTP routes, for people and tools (the typed client uses the WebSocket). Every route, its bodies,
 * answers and errors are in one table in the package's README ("HTTP API"); the rules they follow:
 *
 * - A write (`PUT`, `DELETE`, `POST /v1/kv/_batch`) answers `200` with a JSON object (`{ sequence }`, `{ deleted }`),
 *   once durable (fsynced with `?sync=1`).
 * - A stored value goes out as it is for `accept: application/msgpack` or `application/octet-stream`; in JSON, a
 *   single value (`GET`) is its exact JSON form or `406 NOT_ACCEPTABLE`, and an entry of a listing or a getMany
 *   says how its value is given (`{ key, value }` or `{ key, bytes }`, change-json.ts), so that it always answers.
 * - A body of a type a route does not take is `415 UNSUPPORTED_MEDIA_TYPE` naming those it takes (`Accept`).
 * - Queries are decoded strictly (`strictQuery`).
 */
export function kvRoutes(scope: FastifyInstance, handle: ActorHandle, replier: HttpReplier): void {
  const packr = replier.packr;
  const decoder = replier.decoder;
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser([MSGPACK, OCTETS], { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  scope.addContentTypeParser(JSON_TYPE, { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, { json: JSON.parse(body as string) } satisfies JsonBody);
    } catch (cause) {
      done(new HeaplessError('BAD_FRAME', 'body is not JSON', { cause }), undefined);
    }
  });
  /** Routes whose body is a request (keys, a batch): JSON or msgpack. */
  const requestBody = { preParsing: takesBodies([JSON_TYPE, MSGPACK]) };
  /** Routes whose body is a value to store: JSON (encoded to msgpack once), msgpack or any bytes, stored as they are. */
  const valueBody = { preParsing: takesBodies([JSON_TYPE, MSGPACK, OCTETS]) };
  const noBody = { preParsing: takesBodies([]) };

  /** A decoded body: JSON as parsed, msgpack unpacked. */
  const bodyValue = (req: FastifyRequest): unknown => {
    const b = req.body;
    if (isJsonBody(b)) return b.json;
    if (Buffer.isBuffer(b)) return unpackBody(decoder, b);
    throw new HeaplessError('BAD_REQUEST', 'a JSON or msgpack body is needed');
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
  /** Answers a GET of stored bytes in the type `accept` asks for; NOT_ACCEPTABLE for JSON of what has no JSON form. */
  const sendStored = (req: FastifyRequest, reply: FastifyReply, bytes: Uint8Array, what: string) => {
    const accept = req.headers.accept ?? '';
    if (accept.includes(OCTETS)) return reply.type(OCTETS).send(asBuffer(bytes));
    if (accept.includes(MSGPACK)) return reply.type(MSGPACK).send(asBuffer(bytes));
    const json = exactJson(decoder, bytes);
    if (json === undefined) {
      throw new HeaplessError(
        'NOT_ACCEPTABLE',
        `${what} has no exact JSON form (it is not msgpack, or holds bytes, a bigint, a date...): ask for ${OCTETS} or ${MSGPACK}`,
      );
    }
    return sendJson(reply, json);
  };
  const sendJson = (reply: FastifyReply, json: string) => reply.type('application/json; charset=utf-8').send(json);
  /** A listing's or getMany's entry in JSON: `{ key, value }` or `{ key, bytes }`. */
  const entryJson = (key: string, bytes: Uint8Array) => withValueJson(decoder, { key }, bytes);

  watchRoute(scope, handle, replier);

  scope.get('/v1/kv/:key', async (req, reply) => {
    const key = keyOf(req);
    const bytes = (await handle.call('get', [key])) as Uint8Array | undefined;
    if (bytes === undefined) return replier.error(req, reply, 'NOT_FOUND', `no value under ${key}`);
    return sendStored(req, reply, bytes, `the value under ${key}`);
  });

  scope.put('/v1/kv/:key', valueBody, async (req, reply) => {
    // A batch of one, for the answer every write gives: its sequence.
    const result = await handle.call('setMany', [[[keyOf(req), storedBytes(req)]], { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.post('/v1/kv/_batch', requestBody, async (req, reply) => {
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
    return sendStored(req, reply, bytes, `metadata ${name}`);
  });

  scope.put('/v1/kv/_meta/:name', valueBody, async (req, reply) => {
    const result = await handle.call('setMeta', [nameOf(req), storedBytes(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.delete('/v1/kv/_meta/:name', noBody, async (req, reply) => {
    const result = await handle.call('deleteMeta', [nameOf(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, result);
  });

  scope.delete('/v1/kv/:key', noBody, async (req, reply) => {
    const deleted = await handle.call('delete', [keyOf(req), { sync: syncOf(req) }]);
    return replier.value(req, reply, 200, { deleted });
  });

  scope.post('/v1/kv/_getMany', requestBody, async (req, reply) => {
    const keys = bodyValue(req);
    const values = (await handle.call('getMany', [keys])) as (Uint8Array | undefined)[];
    if (wantsMsgpack(req)) return replier.value(req, reply, 200, values);
    // The actor took `keys`: an array of strings, one per value.
    const names = keys as string[];
    return sendJson(reply, `[${values.map((v, i) => (v === undefined ? 'null' : entryJson(names[i], v))).join(',')}]`);
  });

  scope.post('/v1/kv/_checkpoint', requestBody, async (req, reply) => {
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
    const entries = page.entries.map(([k, v]) => entryJson(k, v)).join(',');
    return sendJson(reply, `{"entries":[${entries}],"cursor":${JSON.stringify(page.cursor ?? null)}}`);
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
