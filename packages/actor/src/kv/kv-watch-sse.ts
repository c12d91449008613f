/**
 * `GET /v1/watch?prefix=&fromSequence=`: the KV watch (kv-watch.ts) as Server-Sent Events, for browsers'
 * `EventSource` and tools (FORMAT.md of @heapless/client, "KV watch over SSE"). Each change is an event whose id is
 * its sequence, so that an `EventSource` that reconnects (after WATCH_OVERFLOW, a restart) sends `Last-Event-ID`
 * and resumes with neither a gap nor a duplicate.
 *
 *   event: open     data: {"sequence":N}                      first, the watch's head
 *   id: S
 *   event: change   data: {"sequence":S,"key":K,"value":V}    a set, V the value decoded from msgpack to JSON
 *                   data: {"sequence":S,"key":K,"bytes":B64}  a set whose value has no JSON form (not msgpack, ...)
 *                   data: {"sequence":S,"key":K,"deleted":true}
 *   event: end      data: {"code":C,"wire":W,"message":M}     last, then the response ends
 */
import type { ServerResponse } from 'node:http';
import { ERROR_CODES, type ErrorCode, HeaplessError, type KvChange } from '@heapless/client/protocol';
import type { FastifyInstance } from 'fastify';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { isPushStream, type PushSink, type PushStream } from '../runtime/push-stream.js';
import type { HttpReplier } from '../server/http-reply.js';
import { changeJson } from './change-json.js';
import { strictQuery } from './kv-http.js';

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
const KEEP_ALIVE_MS = 15_000;
/** A decimal sequence: digits only, no sign, exponent or leading zeros, at most 16 of them. */
const SEQUENCE = /^(0|[1-9][0-9]{0,15})$/;

/** `text` as a `fromSequence`, or undefined for none; BAD_ARGUMENTS for anything but a safe integer ≥ 0. */
export function parseSequence(text: string | undefined, what: string): number | undefined {
  if (text === undefined) return undefined;
  const n = SEQUENCE.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw new HeaplessError('BAD_ARGUMENTS', `${what} is a sequence number (decimal digits, at most 2^53 - 1)`);
  }
  return n;
}

/** One SSE response as a watch's sink. */
class SseSink implements PushSink {
  readonly #res: ServerResponse;
  readonly #replier: HttpReplier;
  readonly #timer: ReturnType<typeof setInterval>;
  #ended = false;

  constructor(res: ServerResponse, replier: HttpReplier, onGone: () => void) {
    this.#res = res;
    this.#replier = replier;
    this.#timer = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    res.once('close', () => {
      clearInterval(this.#timer);
      onGone();
    });
  }

  get pendingBytes(): number {
    return this.#res.writableLength;
  }

  push(items: Uint8Array, count: number): void {
    if (this.#ended || count === 0) return;
    const changes = this.#replier.packr.unpackMultiple(items) as KvChange[];
    let text = '';
    for (const c of changes) text += `id: ${c[0]}\nevent: change\ndata: ${changeJson(this.#replier.decoder, c)}\n\n`;
    this.#res.write(text);
  }

  end(code: ErrorCode, message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#timer);
    const data = JSON.stringify({ code, wire: ERROR_CODES[code].wire, message });
    this.#res.end(`event: end\ndata: ${data}\n\n`);
  }
}

/**
 * Adds `GET /v1/watch` to the KV routes' scope. The query is decoded strictly (`strictQuery`: BAD_URL for a bad
 * escape); `fromSequence` (or the `Last-Event-ID` header when the query has none) must be decimal digits. Refusals
 * come before the stream opens, as a JSON error with their status (400, 410 SEQUENCE_GONE...). The server's close
 * ends every stream with SHUTTING_DOWN first.
 */
export function watchRoute(scope: FastifyInstance, handle: ActorHandle, replier: HttpReplier): void {
  const open = new Set<{ stream: PushStream<unknown>; sink: SseSink }>();
  scope.addHook('preClose', (done) => {
    for (const o of [...open]) {
      o.stream.cancel();
      o.sink.end('SHUTTING_DOWN', 'the server is shutting down');
    }
    done();
  });
  scope.get('/v1/watch', async (req, reply) => {
    const q = strictQuery(req.url);
    const lastEventId = req.headers['last-event-id'];
    const from =
      q.fromSequence !== undefined
        ? parseSequence(q.fromSequence, 'fromSequence')
        : parseSequence(typeof lastEventId === 'string' ? lastEventId : undefined, 'Last-Event-ID');
    const stream = await handle.call('watch', [q.prefix ?? '', from === undefined ? {} : { fromSequence: from }]);
    if (!isPushStream(stream)) throw new HeaplessError('INTERNAL', 'watch did not answer a stream');
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>), // CORS ones, set by the server's guard
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    res.write(`event: open\ndata: ${JSON.stringify(stream.head)}\n\n`);
    const entry = {
      stream,
      sink: new SseSink(res, replier, () => {
        open.delete(entry);
        stream.cancel();
      }),
    };
    open.add(entry);
    res.on('drain', () => stream.drained());
    stream.open(entry.sink);
  });
}
