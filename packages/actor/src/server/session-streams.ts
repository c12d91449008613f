import { ERROR_CODES, type ErrorCode, type FrameEncoder } from '@heapless/client/protocol';
import { HeldMemory } from '../runtime/held-memory.js';
import type { PushSink, PushStream } from '../runtime/push-stream.js';
import type { SessionSocket } from './session-socket.js';

/** The call that cancels a stream of the connection (FORMAT.md, "Streams"); no actor method can have this name. */
export const CANCEL_METHOD = '$cancel';

/**
 * Streams one connection may have open at once: each costs a pass over every change the KV actor commits and up to
 * its bound of memory, so that a client cannot take the server's time with thousands of them. A stream that ended
 * keeps its place until what it pushed has been written, so that a peer that does not read cannot pile up the
 * memory of streams it lets overflow and opens again.
 */
export const MAX_STREAMS_PER_CONNECTION = 64;

/**
 * The head of an items message as one reply frame holding one message (FORMAT.md "Streams"):
 *
 *   91            frame: array of 1 message
 *   93 00         [ 0,
 *   <uint sid>      stream id (msgpack uint: fixint, cc, cd or ce),
 *   <array n>       array header of the n items (fixarray, dc + u16 or dd + u32) ]
 *
 * followed by the items' own encodings, as the stream made them (sent as a second fragment of the same message).
 */
function itemsHead(sid: number, count: number): Buffer {
  const b = Buffer.allocUnsafe(3 + 5 + 5);
  b[0] = 0x91;
  b[1] = 0x93;
  b[2] = 0x00;
  let p = 3;
  if (sid < 0x80) b[p++] = sid;
  else if (sid < 0x100) {
    b[p++] = 0xcc;
    b[p++] = sid;
  } else if (sid < 0x10000) {
    b[p++] = 0xcd;
    b.writeUInt16BE(sid, p);
    p += 2;
  } else {
    b[p++] = 0xce;
    b.writeUInt32BE(sid, p);
    p += 4;
  }
  if (count < 16) b[p++] = 0x90 | count;
  else if (count < 0x10000) {
    b[p++] = 0xdc;
    b.writeUInt16BE(count, p);
    p += 2;
  } else {
    b[p++] = 0xdd;
    b.writeUInt32BE(count, p);
    p += 4;
  }
  return b.subarray(0, p);
}

/** One open stream's sink on the connection's socket. */
class SocketSink implements PushSink {
  /** The memory its messages not yet written hold. */
  readonly held = new HeldMemory();
  ended = false;

  constructor(
    readonly streams: SessionStreams,
    readonly id: number,
    readonly stream: PushStream<unknown>,
  ) {}

  get pendingBytes(): number {
    return this.held.bytes;
  }

  push(items: Uint8Array, count: number): void {
    if (this.ended || count === 0) return;
    this.streams.send(this, itemsHead(this.id, count), items);
  }

  end(code: ErrorCode, message: string): void {
    if (this.ended) return;
    this.ended = true;
    this.streams.finish(this, code, message);
  }

  /** The socket wrote a message of this stream's to the kernel (or dropped it as it closed). */
  written(head: Uint8Array, items: Uint8Array): void {
    this.held.release(head, items);
    if (!this.ended) this.stream.drained();
    else if (this.held.bytes === 0) this.streams.release(this);
  }
}

/**
 * The streams open on one connection (session.ts hands them over): their ids, their sinks on the
 * socket, and their ends. Items and ends go straight to the socket: a stream is opened only once its reply was
 * handed to the socket, so nothing of it overtakes that reply.
 */
export class SessionStreams {
  readonly #socket: SessionSocket;
  readonly #encoder: FrameEncoder;
  readonly #onWritten: () => void;
  readonly #open = new Map<number, SocketSink>();
  /** Streams that ended with messages not yet written: each keeps its place among the connection's streams. */
  readonly #ending = new Set<SocketSink>();
  #nextId = 1;
  /** The socket closed: nothing more is attached. */
  #closed = false;

  /** `onWritten` is told whenever a frame of a stream reached the kernel (the peer is reading). */
  constructor(socket: SessionSocket, encoder: FrameEncoder, onWritten: () => void) {
    this.#socket = socket;
    this.#encoder = encoder;
    this.#onWritten = onWritten;
  }

  /** Streams open now, and ended ones whose messages are not all written yet. */
  get size(): number {
    return this.#open.size + this.#ending.size;
  }

  /**
   * Registers `stream` and returns its id; 0 when the connection has its maximum of streams open, -1 when its
   * socket has closed.
   */
  attach(stream: PushStream<unknown>): number {
    if (this.#closed) return -1;
    if (this.size >= MAX_STREAMS_PER_CONNECTION) return 0;
    let id = this.#nextId;
    while (this.#open.has(id)) id = id === 0xffff_ffff ? 1 : id + 1;
    this.#nextId = id === 0xffff_ffff ? 1 : id + 1;
    this.#open.set(id, new SocketSink(this, id, stream));
    return id;
  }

  /** Starts stream `id` (after its reply was sent). */
  open(id: number): void {
    const s = this.#open.get(id);
    if (s !== undefined) s.stream.open(s);
  }

  /** The peer's `$cancel`: stops stream `id`; false when it has no such stream open. */
  cancel(id: unknown): boolean {
    const s = typeof id === 'number' ? this.#open.get(id) : undefined;
    if (s === undefined) return false;
    this.#open.delete(s.id);
    s.ended = true;
    this.#hold(s);
    s.stream.cancel();
    return true;
  }

  /** An ended stream's messages are all written: its place is free. */
  release(sink: SocketSink): void {
    this.#ending.delete(sink);
  }

  /** Keeps an ended stream's place while its messages are not all written. */
  #hold(sink: SocketSink): void {
    if (sink.held.bytes > 0) this.#ending.add(sink);
  }

  /** Ends every stream with `code` (the server is shutting down): each gets its end message, then is cancelled. */
  endAll(code: ErrorCode, message: string): void {
    for (const s of [...this.#open.values()]) {
      s.stream.cancel();
      s.end(code, message);
    }
  }

  /** The socket closed: every stream is cancelled, nothing is sent. */
  cancelAll(): void {
    this.#closed = true;
    const all = [...this.#open.values()];
    this.#open.clear();
    this.#ending.clear();
    for (const s of all) {
      s.ended = true;
      s.stream.cancel();
    }
  }

  /**
   * Sends one message of a stream as one frame in two parts, its head then its items, so that the items (shared by
   * every watcher of a round) are written as they are, not copied per connection.
   */
  send(sink: SocketSink, head: Buffer, items: Uint8Array): void {
    const socket = this.#socket;
    if (!socket.open) return;
    sink.held.hold(head, items);
    socket.sendParts(head, items, () => {
      sink.written(head, items);
      this.#onWritten();
    });
  }

  /** `[0, id, code, message]`, then the stream is gone. */
  finish(sink: SocketSink, code: ErrorCode, message: string): void {
    this.#open.delete(sink.id);
    this.#hold(sink);
    if (!this.#socket.open) return;
    this.#socket.send(this.#encoder.encodeDetached([[0, sink.id, ERROR_CODES[code].wire, message]]));
  }
}
