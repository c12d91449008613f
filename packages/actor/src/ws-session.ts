import {
  CLOSE_CODES,
  ERROR_CODES,
  FrameDecoder,
  FrameEncoder,
  HELLO_ID,
  HeaplessError,
  type ServerHello,
} from '@heapless/client/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { ActorHandle } from './actor-handle.js';
import type { ReplySink } from './reply-sink.js';
import { wireCodeOf, wireMessageOf } from './wire-error.js';

/** How long a peer gets to answer our close frame before its socket is destroyed. */
const CLOSE_GRACE_MS = 2000;

/**
 * One WebSocket connection to a published actor (FORMAT.md). It decodes call frames, posts each call to the actor with
 * itself as the reply sink (no promise or closure per call), runs them at once when the actor is idle, and sends the
 * replies ready at the end of the frame as one frame (replies settled later, by async methods, go out from a
 * microtask, one frame per batch of promise reactions). Backpressure: a call counts as in flight from the moment its frame is read until its reply has been handed to
 * the kernel; at `maxInFlight` the session stops reading the socket (`ws.pause()`) and resumes at half of it, so a
 * client that sends faster than the actor answers, or does not read its replies, is slowed down rather than buffered.
 */
export class WsSession implements ReplySink {
  readonly #ws: WebSocket;
  readonly #handle: ActorHandle;
  readonly #hello: ServerHello;
  readonly #log: FastifyBaseLogger;
  readonly #decoder = new FrameDecoder();
  readonly #encoder = new FrameEncoder();
  #replies: unknown[][] = [];
  #flushQueued = false;
  /** While a frame's calls are being posted and run: replies wait for the end of the frame, which sends them. */
  #inFrame = false;
  #inFlight = 0;
  #paused = false;
  #shuttingDown = false;
  #closeSent = false;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  /** Resolves when the socket has closed, however that happened. */
  readonly closed: Promise<void>;

  constructor(ws: WebSocket, handle: ActorHandle, hello: ServerHello, log: FastifyBaseLogger) {
    this.#ws = ws;
    this.#handle = handle;
    this.#hello = hello;
    this.#log = log;
    this.closed = new Promise((resolve) => {
      ws.once('close', () => {
        clearTimeout(this.#graceTimer);
        resolve();
      });
    });
    ws.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    ws.on('error', (e) => this.#log.debug({ err: e }, 'websocket error'));
    ws.send(this.#encoder.encodeDetached([[HELLO_ID, hello]]));
  }

  /** Calls read and not yet answered on the wire. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Stops taking calls (new ones get `SHUTTING_DOWN`), lets the ones in flight finish, then closes with 1001. */
  shutdown(): Promise<void> {
    this.#shuttingDown = true;
    if (this.#inFlight === 0) this.#close(CLOSE_CODES.GOING_AWAY, 'SHUTTING_DOWN');
    return this.closed;
  }

  resolve(id: number, value: unknown): void {
    this.#queueReply([id, value]);
  }

  reject(id: number, error: unknown): void {
    const code = wireCodeOf(error);
    if (code === 'ACTOR_ERROR') this.#log.debug({ err: error }, 'actor method failed');
    this.#queueReply([id, ERROR_CODES[code].wire, wireMessageOf(error)]);
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#closeSent) return;
    if (!isBinary) {
      this.#close(CLOSE_CODES.UNSUPPORTED_DATA, 'TEXT_FRAME');
      return;
    }
    let calls: ReturnType<FrameDecoder['decodeCalls']>;
    try {
      calls = this.#decoder.decodeCalls(data as Buffer, this.#hello.maxCallsPerFrame);
    } catch (e) {
      const code = e instanceof HeaplessError ? e.code : 'BAD_FRAME';
      this.#log.info({ code, reason: wireMessageOf(e) }, 'closing a connection that broke the protocol');
      this.#close(code === 'TOO_MANY_CALLS' ? CLOSE_CODES.POLICY : CLOSE_CODES.INVALID_PAYLOAD, code);
      return;
    }
    const handle = this.#handle;
    this.#inFlight += calls.length;
    this.#inFrame = true;
    try {
      for (let i = 0; i < calls.length; i++) {
        const [id, method, args] = calls[i];
        if (typeof method !== 'string' || !Array.isArray(args)) {
          this.reject(id, new HeaplessError('BAD_REQUEST', 'a call is [id, method: string, args: array]'));
        } else if (this.#shuttingDown) {
          this.reject(id, new HeaplessError('SHUTTING_DOWN', `server is shutting down, ${method} was not run`));
        } else if (!handle.exposed.has(method)) {
          this.reject(id, new HeaplessError('UNKNOWN_METHOD', `unknown method ${method}`));
        } else {
          handle.post(method, args, this, id);
        }
      }
      // Run them now rather than a microtask later, and answer every call that finished in the same frame, before
      // ws reads the next one: a call to an idle actor is answered within the turn its frame arrived in.
      handle.runQueued();
    } finally {
      this.#inFrame = false;
    }
    if (this.#replies.length > 0) this.#flush();
    if (this.#inFlight >= this.#hello.maxInFlight && !this.#paused) {
      this.#paused = true;
      this.#ws.pause();
    }
  }

  #queueReply(reply: unknown[]): void {
    this.#replies.push(reply);
    if (!this.#flushQueued && !this.#inFrame) {
      // A reply settled later (an async or detached method): sent from a microtask, so that every reply settled
      // by the same promise reactions (one group commit answers many writes) goes in one frame.
      this.#flushQueued = true;
      queueMicrotask(this.#flush);
    }
  }

  #flush = (): void => {
    this.#flushQueued = false;
    const replies = this.#replies;
    if (replies.length === 0) return;
    this.#replies = [];
    this.#send(replies);
  };

  /**
   * Sends `replies` in as few frames as fit under maxFrameBytes; a single reply too big, or whose result cannot be
   * encoded (a BigInt beyond 64 bits, a cycle), becomes an error reply.
   */
  #send(replies: unknown[][]): void {
    let bytes: Uint8Array | null = null;
    let problem: [number, string] | null = null;
    try {
      bytes = this.#encoder.encodeDetached(replies);
      if (bytes.length > this.#hello.maxFrameBytes) {
        problem = [
          ERROR_CODES.FRAME_TOO_LARGE.wire,
          `reply of ${bytes.length} bytes exceeds the frame limit of ${this.#hello.maxFrameBytes}`,
        ];
      }
    } catch (e) {
      problem = [ERROR_CODES.ACTOR_ERROR.wire, `the result cannot be encoded: ${wireMessageOf(e)}`];
    }
    if (problem === null && bytes !== null) {
      const n = replies.length;
      this.#ws.send(bytes, () => this.#written(n));
      return;
    }
    if (replies.length > 1) {
      const half = replies.length >>> 1;
      this.#send(replies.slice(0, half));
      this.#send(replies.slice(half));
      return;
    }
    this.#send([[replies[0][0], problem![0], problem![1]]]);
  }

  #written(n: number): void {
    this.#inFlight -= n;
    if (this.#paused && this.#inFlight <= this.#hello.maxInFlight >>> 1) {
      this.#paused = false;
      this.#ws.resume();
    }
    if (this.#shuttingDown && this.#inFlight === 0) this.#close(CLOSE_CODES.GOING_AWAY, 'SHUTTING_DOWN');
  }

  #close(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    if (this.#paused) this.#ws.resume(); // the close handshake needs the peer's close frame to be read
    this.#ws.close(code, reason);
    this.#graceTimer = setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS);
  }
}
