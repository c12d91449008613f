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
import { ERROR_CODES, type ErrorCode, HeaplessError } from '@heapless/client/protocol';
import type { FastifyInstance } from 'fastify';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { HeldMemory } from '../runtime/held-memory.js';
import { isPushStream, type PushSink, type PushStream } from '../runtime/push-stream.js';
import type { HttpReplier } from '../server/http-reply.js';
import { changeJson } from './change-json.js';
import { type DecodedChange, readChange } from './change-list.js';
import { strictQuery } from './strict-query.js';

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
const KEEP_ALIVE_MS = 15_000;
/** A decimal sequence: digits only, no sign, exponent or leading zeros, at most 16 of them. */
const SEQUENCE = /^(0|[1-9][0-9]{0,15})$/;
const EMPTY = new Uint8Array(0);

/** `text` as a `fromSequence`, or undefined for none; BAD_ARGUMENTS for anything but a safe integer ≥ 0. */
export function parseSequence(text: string | undefined, what: string): number | undefined {
  if (text === undefined) return undefined;
  const n = SEQUENCE.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw new HeaplessError('BAD_ARGUMENTS', `${what} is a sequence number (decimal digits, at most 2^53 - 1)`);
  }
  return n;
}

/**
 * How much event text a response is given before it must drain: changes wait as the msgpack they were pushed as
 * (views, held) and become text only as the peer reads, so that a watcher that does not read holds its bound of
 * changes, not their JSON (up to six times larger).
 */
const WRITE_BYTES = 64 * 1024;
/**
 * How long an ended stream waits for its peer to read what it was sent and the end event: a peer that has not read
 * in that time is gone or hostile, and its socket (and what it held) is let go, as a WebSocket peer that does not
 * answer the close is dropped.
 */
const END_GRACE_MS = 10_000;

/** Items pushed and not yet written as events: `at` is where the next change starts. */
interface Waiting {
  readonly items: Uint8Array;
  at: number;
}

/**
 * One SSE response as a watch's sink. What it holds (`pendingBytes`): the buffers behind the items waiting to become
 * events, and the event text the response has not handed to the kernel; an event is made only while that text is
 * under WRITE_BYTES, so a watcher that does not read holds at most its watch's bound plus one change's event.
 */
class SseSink implements PushSink {
  readonly #res: ServerResponse;
  readonly #replier: HttpReplier;
  readonly #timer: ReturnType<typeof setInterval>;
  #grace: ReturnType<typeof setTimeout> | undefined;
  readonly #held = new HeldMemory();
  readonly #waiting: Waiting[] = [];
  readonly #change: DecodedChange = { sequence: 0, key: EMPTY, value: null, end: 0 };
  /** The end event, written once every change pushed before it was. */
  #endEvent: string | null = null;
  #ended = false;

  constructor(res: ServerResponse, replier: HttpReplier, stream: PushStream<unknown>, onGone: () => void) {
    this.#res = res;
    this.#replier = replier;
    this.#timer = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    res.on('drain', () => {
      this.#flush();
      if (!this.#ended) stream.drained();
    });
    res.once('close', () => {
      clearInterval(this.#timer);
      clearTimeout(this.#grace);
      this.#waiting.length = 0;
      onGone();
    });
  }

  get pendingBytes(): number {
    return this.#held.bytes + this.#res.writableLength;
  }

  push(items: Uint8Array, count: number): void {
    if (this.#ended || count === 0) return;
    this.#held.hold(items);
    this.#waiting.push({ items, at: 0 });
    this.#flush();
  }

  /** Ends the stream with `code`, after the changes pushed before; `now`: drops those not yet written. */
  end(code: ErrorCode, message: string, now = false): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#timer);
    this.#endEvent = `event: end\ndata: ${JSON.stringify({ code, wire: ERROR_CODES[code].wire, message })}\n\n`;
    if (now) this.#waiting.length = 0;
    this.#flush();
    if (this.#endEvent !== null || this.#res.writableLength > 0) {
      const res = this.#res;
      this.#grace = setTimeout(() => res.destroy(), END_GRACE_MS);
      this.#grace.unref();
    }
  }

  /** Writes waiting changes as events while the response holds less than WRITE_BYTES, then the end when due. */
  #flush(): void {
    const res = this.#res;
    const c = this.#change;
    while (this.#waiting.length > 0 && res.writableLength < WRITE_BYTES) {
      const w = this.#waiting[0]!;
      let text = '';
      while (w.at < w.items.length && text.length < WRITE_BYTES) {
        readChange(w.items, w.at, c);
        w.at = c.end;
        const key = Buffer.from(c.key.buffer, c.key.byteOffset, c.key.byteLength).toString('utf8');
        text += `id: ${c.sequence}\nevent: change\ndata: ${changeJson(this.#replier.decoder, [c.sequence, key, c.value])}\n\n`;
      }
      res.write(Buffer.from(text)); // bytes, so that writableLength counts what the event text holds
      if (w.at >= w.items.length) {
        this.#waiting.shift();
        this.#held.release(w.items);
      }
    }
    if (this.#waiting.length === 0 && this.#endEvent !== null) {
      res.end(this.#endEvent);
      this.#endEvent = null;
    }
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
      o.sink.end('SHUTTING_DOWN', 'the server is shutting down', true);
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
      sink: new SseSink(res, replier, stream, () => {
        open.delete(entry);
        stream.cancel();
      }),
    };
    open.add(entry);
    stream.open(entry.sink);
  });
}
