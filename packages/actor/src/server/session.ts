import {
  type CallMessage,
  CLOSE_CODES,
  ERROR_CODES,
  FrameDecoder,
  FrameEncoder,
  HELLO_ID,
  HeaplessError,
  type ServerHello,
} from '@heapless/client/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { isPushStream, type PushStream } from '../runtime/push-stream.js';
import type { ReplySink } from '../runtime/reply-sink.js';
import { RingQueue } from '../runtime/ring-queue.js';
import type { SessionSocket } from './session-socket.js';
import { CANCEL_METHOD, MAX_STREAMS_PER_CONNECTION, SessionStreams } from './session-streams.js';

export type { SessionSocket } from './session-socket.js';

import { wireCodeOf, wireMessageOf } from './wire-error.js';

/** How long a peer gets to answer our close frame before its socket is destroyed. */
const CLOSE_GRACE_MS = 2000;

/** What one connection may hold of the server's memory before the server stops reading it (publish's options). */
export interface SessionLimits {
  /** Calls read and not yet answered on the wire. */
  maxInFlight: number;
  /** Bytes of call frames read and not yet answered in full (the actor's arguments are views of these frames). */
  maxRequestBytes: number;
  /** Bytes of replies made and not yet handed to the kernel; at this many no further call is run. */
  maxReplyBytes: number;
}

/** Byte counts of one session, for the server's metrics. */
export interface SessionLoad {
  requestBytes: number;
  replyBytes: number;
  paused: boolean;
}

/**
 * An upper bound of the msgpack size of a reply `[id, value]` whose value is a scalar, a string or bytes, found
 * without encoding it; -1 for anything else (arrays, maps), whose size is only known once encoded.
 */
function replyBytesBound(value: unknown): number {
  const REPLY_HEAD = 1 + 5; // array header, uint32 id
  if (value === undefined || value === null || typeof value === 'boolean') return REPLY_HEAD + 3;
  if (typeof value === 'number' || typeof value === 'bigint') return REPLY_HEAD + 9;
  if (typeof value === 'string') return REPLY_HEAD + 5 + 3 * value.length;
  if (value instanceof Uint8Array) return REPLY_HEAD + 5 + value.byteLength;
  return -1;
}

/**
 * The calls of one frame, and the reply sink of each of them: the actor is given the call's index in the frame as
 * its id, so a reply finds its frame, and the frame's bytes are released once its last call is answered, without a
 * record per call.
 */
class InboundFrame implements ReplySink {
  /** Index of the next call to start. */
  next = 0;
  unanswered: number;

  constructor(
    readonly session: Session,
    readonly calls: CallMessage[],
    readonly bytes: number,
  ) {
    this.unanswered = calls.length;
  }

  resolve(index: number, value: unknown): void {
    if (isPushStream(value)) {
      this.session.streamOpened(this, index, value);
      return;
    }
    this.session.answered(this, index, [this.calls[index][0], value], replyBytesBound(value));
  }

  reject(index: number, error: unknown): void {
    this.session.failed(this, index, error);
  }

  ran(index: number): void {
    this.session.ran(this, index);
  }
}

/**
 * One connection to a published actor (FORMAT.md), over any transport ({@link SessionSocket}). It decodes call frames and gives their calls to the
 * actor **one at a time**: the next call is posted when the previous one has run (a synchronous method returned, or
 * an async one returned its promise), so that a connection never has more than one call waiting in the mailbox.
 * The mailbox runs such a chain within one turn, so pipelining costs nothing, and calls of several connections take
 * turns. Replies ready at the end of a frame go out as one frame; replies settled later (async methods) go out from
 * a microtask, one frame per batch of promise reactions.
 *
 * Bounds per connection ({@link SessionLimits}): calls in flight, bytes of requests not yet answered, and bytes of
 * replies not yet handed to the kernel. At any of them the session stops reading the socket, and at
 * the reply bound it also stops running calls, so that a client that does not read its replies holds at most about
 * `maxReplyBytes` plus one reply of the server's memory. It resumes once each is back under half.
 */
export class Session {
  readonly #socket: SessionSocket;
  readonly #handle: ActorHandle;
  readonly #limits: SessionLimits;
  readonly #maxCallsPerFrame: number;
  readonly #maxFrameBytes: number;
  readonly #log: FastifyBaseLogger;
  readonly #decoder = new FrameDecoder();
  readonly #encoder = new FrameEncoder();
  /** Frames with calls not yet started, oldest first. */
  readonly #frames = new RingQueue<InboundFrame>();
  /** The call posted to the actor and not yet run (frame and index), or null. */
  #waiting: InboundFrame | null = null;
  #waitingIndex = -1;
  #pumping = false;
  #replies: unknown[][] = [];
  /** Upper bound of the encoded size of {@link #replies}. */
  #queuedBytes = 0;
  /** Bytes of replies handed to the socket and not yet to the kernel. */
  #outBytes = 0;
  #requestBytes = 0;
  #flushQueued = false;
  /** While a frame's calls are being posted and run: replies wait for the end of the frame, which sends them. */
  #inFrame = false;
  #inFlight = 0;
  #paused = false;
  #shuttingDown = false;
  #closeSent = false;
  /** Whether the peer showed a sign of life (a pong, a frame, a reply it took) since the last heartbeat. */
  #heard = true;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  /** The streams (KV watches) open on this connection. */
  readonly #streams: SessionStreams;
  #resolveClosed: () => void = () => {};
  /** Resolves when the socket has closed, however that happened. */
  readonly closed: Promise<void>;

  /** Sends the hello at once; the transport then feeds the session what it reads. */
  constructor(
    socket: SessionSocket,
    handle: ActorHandle,
    hello: ServerHello,
    limits: SessionLimits,
    log: FastifyBaseLogger,
  ) {
    this.#socket = socket;
    this.#handle = handle;
    this.#limits = limits;
    this.#log = log;
    this.#streams = new SessionStreams(socket, this.#encoder, () => {
      this.#heard = true;
    });
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    this.#maxCallsPerFrame = hello.maxCallsPerFrame;
    this.#maxFrameBytes = hello.maxFrameBytes;
    socket.send(this.#encoder.encodeDetached([[HELLO_ID, hello]]));
  }

  /** The peer showed a sign of life (a pong, a heartbeat). */
  heard(): void {
    this.#heard = true;
  }

  /** The socket has closed, however that happened: streams are cancelled, {@link closed} resolves. */
  socketClosed(): void {
    this.#streams.cancelAll();
    clearTimeout(this.#graceTimer);
    this.#resolveClosed();
  }

  /**
   * The peer broke the protocol in a way the transport found (a text frame, a record over the limit): closes with
   * `code` and `reason`.
   */
  refuse(code: number, reason: string): void {
    this.#close(code, reason);
  }

  /** Calls read and not yet answered on the wire. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** What this connection holds now. */
  get load(): SessionLoad {
    return { requestBytes: this.#requestBytes, replyBytes: this.#outBytes + this.#queuedBytes, paused: this.#paused };
  }

  /** Stops taking calls (new ones get `SHUTTING_DOWN`), lets the ones in flight finish, then closes with 1001. */
  shutdown(): Promise<void> {
    this.#shuttingDown = true;
    this.#streams.endAll('SHUTTING_DOWN', 'the server is shutting down');
    if (this.#inFlight === 0) this.#close(CLOSE_CODES.GOING_AWAY, 'SHUTTING_DOWN');
    return this.closed;
  }

  /**
   * Called every heartbeat interval by the server: closes a peer that showed no sign of life over the last
   * interval (no pong, no frame, no reply taken), then pings. A session that stopped reading for its own reasons
   * (calls the actor has not answered yet) cannot hear pongs, and is not judged while so.
   */
  heartbeat(): void {
    if (this.#closeSent) return;
    const deaf = this.#paused && this.#outBytes + this.#queuedBytes < this.#limits.maxReplyBytes;
    if (!this.#heard && !deaf) {
      this.#log.info('closing a peer that answered no ping');
      this.#closeSent = true;
      this.#socket.terminate();
      return;
    }
    this.#heard = false;
    this.#socket.ping();
  }

  /** A call of `frame` succeeded (called by its {@link InboundFrame}). */
  answered(frame: InboundFrame, index: number, reply: unknown[], bound: number): void {
    this.#settled(frame, index);
    this.#queueReply(reply, bound);
    this.#pump();
  }

  /**
   * A call of `frame` answered with a stream: the reply (its head and id) goes out now, then the stream is opened,
   * so that none of its items overtakes the reply. Refused (and cancelled) while shutting down or past the
   * connection's maximum of streams.
   */
  streamOpened(frame: InboundFrame, index: number, stream: PushStream<unknown>): void {
    const id = this.#closeSent || this.#shuttingDown ? -1 : this.#streams.attach(stream);
    if (id <= 0) {
      stream.cancel();
      const e =
        id < 0
          ? new HeaplessError('SHUTTING_DOWN', 'the server is shutting down')
          : new HeaplessError(
              'TOO_MANY_STREAMS',
              `a connection may have ${MAX_STREAMS_PER_CONNECTION} streams open (one that ended counts until the peer read what it sent)`,
            );
      this.failed(frame, index, e);
      return;
    }
    this.#settled(frame, index);
    this.#queueReply([frame.calls[index][0], { ...stream.head, stream: id }], -1);
    this.#streams.open(id);
    this.#pump();
  }

  /** A call of `frame` failed (called by its {@link InboundFrame}). */
  failed(frame: InboundFrame, index: number, error: unknown): void {
    const code = wireCodeOf(error);
    if (code === 'ACTOR_ERROR') this.#log.debug({ err: error }, 'actor method failed');
    else if (code === 'INTERNAL') this.#log.error({ err: error }, 'call failed');
    const message = wireMessageOf(error);
    this.#settled(frame, index);
    this.#queueReply([frame.calls[index][0], ERROR_CODES[code].wire, message], 1 + 5 + 5 + 5 + 3 * message.length);
    this.#pump();
  }

  /** A call of `frame` has run and will be answered later: the next call may go (called by its {@link InboundFrame}). */
  ran(frame: InboundFrame, index: number): void {
    if (frame === this.#waiting && index === this.#waitingIndex) {
      this.#waiting = null;
      this.#pump();
    }
  }

  #settled(frame: InboundFrame, index: number): void {
    if (frame === this.#waiting && index === this.#waitingIndex) this.#waiting = null;
    if (--frame.unanswered === 0) this.#requestBytes -= frame.bytes;
  }

  /** One call frame the peer sent. */
  frame(bytes: Uint8Array): void {
    this.#heard = true;
    if (this.#closeSent) return;
    let calls: CallMessage[];
    try {
      calls = this.#decoder.decodeCalls(bytes, this.#maxCallsPerFrame);
    } catch (e) {
      const code = e instanceof HeaplessError ? e.code : 'BAD_FRAME';
      this.#log.info({ code, reason: wireMessageOf(e) }, 'closing a connection that broke the protocol');
      this.#close(code === 'TOO_MANY_CALLS' ? CLOSE_CODES.POLICY : CLOSE_CODES.INVALID_PAYLOAD, code);
      return;
    }
    if (calls.length === 0) return;
    this.#inFlight += calls.length;
    this.#requestBytes += bytes.length;
    this.#frames.push(new InboundFrame(this, calls, bytes.length));
    this.#inFrame = true;
    try {
      this.#pump();
      // Run them now rather than a microtask later, and answer every call that finished in the same frame, before
      // the transport reads the next one: a call to an idle actor is answered within the turn its frame arrived in.
      this.#handle.runQueued();
    } finally {
      this.#inFrame = false;
    }
    if (this.#replies.length > 0) this.#flush();
    this.#updateReading();
  }

  /**
   * Gives the actor the next call read, unless one is already waiting in its mailbox or the replies not yet written
   * reached `maxReplyBytes`. Calls refused here (bad shape, unknown method, shutting down) are answered at once.
   */
  #pump(): void {
    if (this.#pumping) return; // a reply settled while posting: the loop below goes on
    this.#pumping = true;
    try {
      const handle = this.#handle;
      const frames = this.#frames;
      while (this.#waiting === null && !this.#closeSent) {
        if (this.#outBytes + this.#queuedBytes >= this.#limits.maxReplyBytes) break;
        const frame = frames.peek();
        if (frame === undefined) break;
        const index = frame.next++;
        if (frame.next === frame.calls.length) frames.shift();
        const [, method, args] = frame.calls[index];
        if (typeof method !== 'string' || !Array.isArray(args)) {
          frame.reject(index, new HeaplessError('BAD_REQUEST', 'a call is [id, method: string, args: array]'));
        } else if (method === CANCEL_METHOD) {
          frame.resolve(index, this.#streams.cancel(args[0]));
        } else if (this.#shuttingDown) {
          frame.reject(index, new HeaplessError('SHUTTING_DOWN', `server is shutting down, ${method} was not run`));
        } else if (!handle.exposed.has(method)) {
          frame.reject(index, new HeaplessError('UNKNOWN_METHOD', `unknown method ${method}`));
        } else {
          this.#waiting = frame;
          this.#waitingIndex = index;
          handle.post(method, args, frame, index);
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Pauses reading at any bound, resumes once every count is back under half of its bound. */
  #updateReading(): void {
    const l = this.#limits;
    const replyBytes = this.#outBytes + this.#queuedBytes;
    if (!this.#paused) {
      if (this.#inFlight >= l.maxInFlight || this.#requestBytes >= l.maxRequestBytes || replyBytes >= l.maxReplyBytes) {
        this.#paused = true;
        this.#socket.pause();
      }
    } else if (
      this.#inFlight <= l.maxInFlight >>> 1 &&
      this.#requestBytes <= l.maxRequestBytes / 2 &&
      replyBytes <= l.maxReplyBytes / 2 &&
      !this.#closeSent
    ) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  /** `bound` is an upper bound of the reply's encoded size, or -1 when unknown: then it is encoded and sent now. */
  #queueReply(reply: unknown[], bound: number): void {
    this.#replies.push(reply);
    if (bound < 0) {
      this.#flush();
      return;
    }
    this.#queuedBytes += bound;
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
    this.#queuedBytes = 0;
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
      if (bytes.length > this.#maxFrameBytes) {
        problem = [
          ERROR_CODES.FRAME_TOO_LARGE.wire,
          `reply of ${bytes.length} bytes exceeds the frame limit of ${this.#maxFrameBytes}`,
        ];
      }
    } catch (e) {
      problem = [ERROR_CODES.ACTOR_ERROR.wire, `the result cannot be encoded: ${wireMessageOf(e)}`];
    }
    if (problem === null && bytes !== null) {
      const n = replies.length;
      const length = bytes.length;
      this.#outBytes += length;
      this.#socket.send(bytes, () => this.#written(n, length));
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

  /** A reply frame of `n` replies and `length` bytes has been handed to the kernel (or the socket failed). */
  #written(n: number, length: number): void {
    this.#heard = true;
    this.#inFlight -= n;
    this.#outBytes -= length;
    if (this.#outBytes <= this.#limits.maxReplyBytes / 2) this.#pump();
    this.#updateReading();
    if (this.#shuttingDown && this.#inFlight === 0) this.#close(CLOSE_CODES.GOING_AWAY, 'SHUTTING_DOWN');
  }

  #close(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    if (this.#paused) this.#socket.resume(); // the close handshake needs the peer's close frame to be read
    this.#socket.close(code, reason);
    this.#graceTimer = setTimeout(() => this.#socket.terminate(), CLOSE_GRACE_MS);
  }
}
