import { CLOSE_CODES } from '../protocol/close-codes.js';
import { codeFromWire, type ErrorCode, isErrorCode } from '../protocol/error-codes.js';
import { FrameDecoder, isServerHello } from '../protocol/frame-decoder.js';
import { FrameEncoder } from '../protocol/frame-encoder.js';
import { HeaplessError } from '../protocol/heapless-error.js';
import { illFormedArguments } from '../protocol/ill-formed.js';
import { DEFAULT_MAX_CALLS_PER_FRAME, DEFAULT_MAX_FRAME_BYTES, HELLO_ID, MAX_CALL_ID } from '../protocol/limits.js';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import { RemoteStream, type StreamHost, type StreamOptions } from './remote-stream.js';
import type { OpenSocket, SocketLike } from './socket-like.js';

/** Options of {@link RpcClient} and `connect()`. */
export interface ConnectOptions {
  /** Sent as `Authorization: Bearer` (Node) or as a subprotocol (browsers). */
  token?: string;
  /** Each call rejects with `TIMEOUT` when no reply came this long after it was made; 0 = never. Default 30 s. Also bounds the wait for the server's hello. */
  timeoutMs?: number;
  /** Reconnect after a dropped connection with exponential backoff and jitter; `false` = do not. Default on. */
  reconnect?: false | BackoffOptions;
}

type State = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A call waiting for its reply; one fixed shape for every call (`stream` set for a call that opens one). */
class Pending {
  sent = false;
  stream: RemoteStream<unknown> | null = null;
  constructor(
    readonly resolve: (v: unknown) => void,
    readonly reject: (e: unknown) => void,
    readonly deadline: number,
  ) {}
}

/** The call that cancels a stream (FORMAT.md, "Streams"): not a method name an actor can have. */
const CANCEL_METHOD = '$cancel';

/**
 * Where the one executor every call's promise is made with leaves its resolving functions, to be picked up right
 * after `new Promise` returns: no closure per call. Owned by one client.
 */
class Resolvers {
  resolve: (v: unknown) => void = noop;
  reject: (e: unknown) => void = noop;
  readonly executor = (resolve: (v: unknown) => void, reject: (e: unknown) => void): void => {
    this.resolve = resolve;
    this.reject = reject;
  };
}

function noop(): void {}

const NO_TIMER = undefined;

/**
 * One pipelined, batching connection to a heapless server. Calls made in the same tick go out in one frame (flushed
 * from a microtask); replies may come in any order and are matched by id. One timer serves every call's timeout:
 * all calls of a client share `timeoutMs`, so their deadlines are in the order the calls were made (the pending
 * map's order) and only the oldest needs watching.
 *
 * Ownership: whoever made the client must `close()` it; after `close()` no socket or timer is left.
 */
export class RpcClient implements StreamHost {
  readonly #url: string;
  readonly #openSocket: OpenSocket;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #backoff: Required<BackoffOptions> | null;
  readonly #encoder = new FrameEncoder();
  readonly #decoder = new FrameDecoder();
  readonly #pending = new Map<number, Pending>();
  /** Open streams by the server's id. */
  readonly #streams = new Map<number, RemoteStream<unknown>>();
  #streamNames: ReadonlySet<string> | null = null;
  #outbox: [number, string, unknown[]][] = [];
  #spare: [number, string, unknown[]][] = [];
  #state: State = 'connecting';
  #socket: SocketLike | null = null;
  #nextId = 1;
  #lastId = 0;
  #flushQueued = false;
  readonly #resolvers = new Resolvers();
  /** performance.now() at the first call of this tick (while open): the calls of a tick share one deadline. */
  #tickNow = 0;
  #maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  #maxCallsPerFrame = DEFAULT_MAX_CALLS_PER_FRAME;
  #methods: ReadonlySet<string> | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined = NO_TIMER;
  #helloTimer: ReturnType<typeof setTimeout> | undefined = NO_TIMER;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined = NO_TIMER;
  #attempt = 0;
  #firstOpen: { resolve: () => void; reject: (e: unknown) => void } | null = null;
  #onClosed: (() => void) | null = null;
  /** Resolves once the first connection is open and the server's hello has arrived; rejects if it never does. */
  readonly ready: Promise<void>;

  /** Starts connecting at once; await {@link ready} before relying on the connection. */
  constructor(url: string, openSocket: OpenSocket, opts: ConnectOptions = {}) {
    this.#url = url;
    this.#openSocket = openSocket;
    this.#token = opts.token;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    this.#backoff =
      opts.reconnect === false
        ? null
        : { minDelayMs: opts.reconnect?.minDelayMs ?? 100, maxDelayMs: opts.reconnect?.maxDelayMs ?? 10_000 };
    this.ready = new Promise((resolve, reject) => {
      this.#firstOpen = { resolve, reject };
    });
    this.#connect();
  }

  /** Calls `method` with `args`; resolves with its result or rejects with a {@link HeaplessError}. */
  call(method: string, args: unknown[]): Promise<unknown> {
    if (this.#state === 'closed') return Promise.reject(new HeaplessError('CLIENT_CLOSED'));
    const id = this.#nextId;
    this.#lastId = id;
    this.#nextId = id === MAX_CALL_ID ? 1 : id + 1;
    const r = this.#resolvers;
    const promise = new Promise(r.executor);
    if (!this.#flushQueued || this.#state !== 'open') this.#tickNow = performance.now();
    const deadline = this.#timeoutMs > 0 ? this.#tickNow + this.#timeoutMs : Number.POSITIVE_INFINITY;
    this.#pending.set(id, new Pending(r.resolve, r.reject, deadline));
    this.#outbox.push([id, method, args]);
    if (!this.#flushQueued && this.#state === 'open') {
      this.#flushQueued = true;
      queueMicrotask(this.#flush);
    }
    if (this.#timer === NO_TIMER && this.#timeoutMs > 0) this.#armTimer();
    return promise;
  }

  /**
   * Calls `method`, whose call opens a stream (one the hello lists in `streams`, such as the KV `watch`), and
   * returns the stream at once: an async iterator of the items the server pushes after its reply. A failed call
   * rejects the first `next()`; the stream ends with `CONNECTION_LOST` when the connection drops (no stream is
   * reopened by a reconnect: open it again, for a watch from the last sequence received) and with `CLIENT_CLOSED`
   * at `close()`.
   */
  stream<T>(method: string, args: unknown[], opts?: StreamOptions): RemoteStream<T> {
    const stream = new RemoteStream<T>(this, opts);
    const p = this.call(method, args);
    const pending = this.#pending.get(this.#lastId);
    if (pending !== undefined) pending.stream = stream as RemoteStream<unknown>;
    p.catch((e: unknown) => stream.ended(e instanceof HeaplessError ? e : new HeaplessError('INTERNAL', String(e))));
    return stream;
  }

  /** Stops stream `id` on the server (StreamHost); what is still on the way is dropped. */
  cancel(id: number): void {
    if (!this.#streams.delete(id)) return;
    this.call(CANCEL_METHOD, [id]).catch(() => {}); // a lost connection ends the stream server-side too
  }

  /** The methods whose call opens a stream, from the server's last hello (null when it listed none). */
  get streams(): ReadonlySet<string> | null {
    return this.#streamNames;
  }

  /** The server's URL. */
  get url(): string {
    return this.#url;
  }

  /** The methods the server's last hello listed, or null before a hello or when it listed none. */
  get methods(): ReadonlySet<string> | null {
    return this.#methods;
  }

  /** Calls made and not yet answered (sent or waiting to be sent). */
  get pendingCalls(): number {
    return this.#pending.size;
  }

  /**
   * Closes the connection and stops reconnecting; unanswered calls reject with `CLIENT_CLOSED`. Resolves once the
   * socket has closed. Calling it again is harmless.
   */
  close(): Promise<void> {
    if (this.#state === 'closed') return Promise.resolve();
    this.#state = 'closed';
    this.#clearTimers();
    this.#failAll(new HeaplessError('CLIENT_CLOSED'), false);
    this.#endStreams(new HeaplessError('CLIENT_CLOSED'));
    this.#firstOpen?.reject(new HeaplessError('CLIENT_CLOSED'));
    this.#firstOpen = null;
    const socket = this.#socket;
    if (socket === null) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onClosed = resolve;
      socket.close(CLOSE_CODES.NORMAL);
    });
  }

  #connect(): void {
    let socket: SocketLike;
    try {
      socket = this.#openSocket(this.#url, this.#token);
    } catch (cause) {
      this.#lost(new HeaplessError('CONNECT_FAILED', `could not open ${this.#url}`, { cause }));
      return;
    }
    this.#socket = socket;
    socket.onmessage = (ev) => this.#onMessage(ev.data);
    socket.onerror = () => {}; // the close event that always follows says what happened
    socket.onclose = (ev) => this.#onClose(socket, ev.code, ev.reason);
    if (this.#timeoutMs > 0) {
      this.#helloTimer = setTimeout(() => {
        this.#helloTimer = NO_TIMER;
        socket.close(CLOSE_CODES.NORMAL);
      }, this.#timeoutMs);
    }
  }

  #onMessage(data: unknown): void {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : (data as Uint8Array);
    let replies: ReturnType<FrameDecoder['decodeReplies']>;
    try {
      replies = this.#decoder.decodeReplies(bytes);
    } catch {
      this.#socket?.close(CLOSE_CODES.INVALID_PAYLOAD, 'BAD_FRAME');
      return;
    }
    const pending = this.#pending;
    for (let i = 0; i < replies.length; i++) {
      const r = replies[i];
      const id = r[0];
      if (id === HELLO_ID) {
        if (r.length === 2) this.#onHello(r[1]);
        else this.#onStreamMessage(r as unknown[]);
        continue;
      }
      const p = pending.get(id);
      if (p === undefined) continue; // timed out earlier
      pending.delete(id);
      if (r.length === 2) {
        // Registered before anything else of the frame is read: the stream's first items may follow in it.
        const s = p.stream;
        if (s !== null) {
          const sid = s.opening(r[1]);
          if (sid !== 0) {
            this.#streams.set(sid, s);
            if (s.finished) this.cancel(sid); // left before the reply came
          }
        }
        p.resolve(r[1]);
      } else p.reject(new HeaplessError(codeFromWire(r[1]), r[2] as string));
    }
  }

  /** `[0, stream, items]` or `[0, stream, code, message]`; for a stream not open (cancelled), nothing. */
  #onStreamMessage(m: unknown[]): void {
    const s = this.#streams.get(m[1] as number);
    if (s === undefined) return;
    if (m.length === 3) {
      s.pushed(m[2] as unknown[]);
      if (s.finished) this.#streams.delete(m[1] as number);
      return;
    }
    this.#streams.delete(m[1] as number);
    s.ended(new HeaplessError(codeFromWire(m[2] as number), m[3] as string));
  }

  /** Ends every open stream with `err`. */
  #endStreams(err: HeaplessError): void {
    const open = [...this.#streams.values()];
    this.#streams.clear();
    for (const s of open) s.ended(err);
  }

  #onHello(hello: unknown): void {
    if (!isServerHello(hello)) {
      this.#socket?.close(CLOSE_CODES.INVALID_PAYLOAD, 'BAD_FRAME');
      return;
    }
    clearTimeout(this.#helloTimer);
    this.#helloTimer = NO_TIMER;
    this.#maxFrameBytes = hello.maxFrameBytes;
    this.#maxCallsPerFrame = hello.maxCallsPerFrame;
    this.#methods = hello.methods === undefined ? null : new Set(hello.methods);
    this.#streamNames = hello.streams === undefined ? null : new Set(hello.streams);
    this.#state = 'open';
    this.#attempt = 0;
    this.#firstOpen?.resolve();
    this.#firstOpen = null;
    this.#flush();
  }

  #onClose(socket: SocketLike, code: number, reason: string): void {
    if (socket !== this.#socket) return;
    this.#socket = null;
    clearTimeout(this.#helloTimer);
    this.#helloTimer = NO_TIMER;
    if (this.#state === 'closed') {
      this.#onClosed?.();
      this.#onClosed = null;
      return;
    }
    const detail = `${this.#url} closed (${code}${reason ? ` ${reason}` : ''})`;
    // A refusal that another attempt would meet again: fail for good, do not reconnect.
    const refusal = finalRefusal(code, reason);
    if (refusal !== undefined) {
      this.#state = 'closed';
      this.#clearTimers();
      const err = new HeaplessError(refusal, detail, { closeCode: code });
      this.#firstOpen?.reject(err);
      this.#firstOpen = null;
      this.#failAll(err, false);
      this.#endStreams(err);
      return;
    }
    const err =
      this.#firstOpen !== null
        ? new HeaplessError('CONNECT_FAILED', `could not connect: ${detail}`, { closeCode: code })
        : new HeaplessError('CONNECTION_LOST', `connection lost: ${detail}`, { closeCode: code });
    this.#lost(err);
  }

  /** The socket is gone: fail what was sent, then reconnect (calls not yet sent wait for the new socket) or give up. */
  #lost(err: HeaplessError): void {
    this.#endStreams(err);
    if (this.#firstOpen !== null) {
      // The first connection never opened: connect() fails and the client is done.
      this.#state = 'closed';
      this.#clearTimers();
      this.#firstOpen.reject(err);
      this.#firstOpen = null;
      this.#failAll(err, false);
      return;
    }
    this.#failAll(err, true);
    if (this.#backoff === null) {
      this.#state = 'closed';
      this.#clearTimers();
      this.#failAll(err, false);
      return;
    }
    this.#state = 'reconnecting';
    const delay = backoffDelay(this.#attempt++, this.#backoff);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = NO_TIMER;
      this.#connect();
    }, delay);
  }

  /** Rejects pending calls with `err`: only those already sent when `sentOnly`, else all of them. */
  #failAll(err: HeaplessError, sentOnly: boolean): void {
    for (const [id, p] of this.#pending) {
      if (sentOnly && !p.sent) continue;
      this.#pending.delete(id);
      p.reject(err);
    }
    if (!sentOnly) this.#outbox.length = 0;
  }

  #flush = (): void => {
    this.#flushQueued = false;
    if (this.#state !== 'open' || this.#outbox.length === 0) return;
    const calls = this.#outbox;
    this.#outbox = this.#spare;
    this.#spare = calls;
    // Drop calls that timed out before they could be sent.
    const pending = this.#pending;
    let n = 0;
    for (let i = 0; i < calls.length; i++) {
      const m = calls[i];
      const p = pending.get(m[0]);
      if (p === undefined) continue;
      p.sent = true;
      calls[n++] = m;
    }
    calls.length = n;
    const max = this.#maxCallsPerFrame;
    if (n <= max) this.#send(calls);
    else for (let i = 0; i < n; i += max) this.#send(calls.slice(i, i + max));
    calls.length = 0;
  };

  /**
   * Sends `calls` as one frame, or as several if the frame would be too big or a value cannot be encoded; a single call
   * that is too big (`CALL_TOO_LARGE`) or cannot be encoded (`BAD_ARGUMENTS`: msgpackr refused a value, or a string
   * has a lone surrogate, which msgpack's UTF-8 strings cannot carry) fails alone, unsent.
   */
  #send(calls: [number, string, unknown[]][]): void {
    const socket = this.#socket;
    if (socket === null) return;
    let bytes: Uint8Array | null = null;
    let failure: HeaplessError | null = null;
    try {
      bytes = this.#encoder.encode(calls);
      failure = illFormedArguments(calls[0][1], bytes, calls) ?? null;
      if (failure === null && bytes.length > this.#maxFrameBytes) {
        failure = new HeaplessError(
          'CALL_TOO_LARGE',
          `call ${calls[0][1]} is ${bytes.length} bytes, the frame limit is ${this.#maxFrameBytes}`,
        );
      }
    } catch (cause) {
      failure = new HeaplessError('BAD_ARGUMENTS', `arguments of ${calls[0][1]} cannot be encoded: ${String(cause)}`, {
        cause,
      });
    }
    if (failure === null && bytes !== null) {
      socket.send(bytes);
      return;
    }
    if (calls.length === 1) {
      const id = calls[0][0];
      const p = this.#pending.get(id);
      this.#pending.delete(id);
      p?.reject(failure);
      return;
    }
    const half = calls.length >>> 1;
    this.#send(calls.slice(0, half));
    this.#send(calls.slice(half));
  }

  #armTimer(): void {
    for (const p of this.#pending.values()) {
      if (p.deadline === Number.POSITIVE_INFINITY) return;
      this.#timer = setTimeout(this.#onTimer, Math.max(0, p.deadline - performance.now()));
      return;
    }
  }

  #onTimer = (): void => {
    this.#timer = NO_TIMER;
    const now = performance.now();
    for (const [id, p] of this.#pending) {
      if (p.deadline > now) break;
      this.#pending.delete(id);
      p.reject(new HeaplessError('TIMEOUT', `no reply within ${this.#timeoutMs} ms`));
    }
    this.#armTimer();
  };

  #clearTimers(): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#helloTimer);
    clearTimeout(this.#reconnectTimer);
    this.#timer = this.#helloTimer = this.#reconnectTimer = NO_TIMER;
  }
}

/** The error code of a close that another attempt would meet again (so the client must not reconnect), if it is one. */
function finalRefusal(code: number, reason: string): ErrorCode | undefined {
  if (code === CLOSE_CODES.UNAUTHORIZED) return 'UNAUTHORIZED';
  if (code === CLOSE_CODES.FORBIDDEN) return isErrorCode(reason) ? reason : 'ORIGIN_NOT_ALLOWED';
  if (code === CLOSE_CODES.PROTOCOL_ERROR && reason === 'UNSUPPORTED_PROTOCOL') return 'UNSUPPORTED_PROTOCOL';
  return undefined;
}
