import { type ErrorCode, STREAM, type STREAM_ITEM, type Streamed } from '@heapless/client/protocol';

/**
 * Where a stream pushes (the server's side of one open stream: a WebSocket session, or an SSE response). Items are
 * msgpack values the stream encoded itself; `pendingBytes` is the memory the sink holds for what it has not yet
 * handed to the kernel (held-memory.ts), the measure of how far the peer is behind and what its bound counts.
 */
export interface PushSink {
  /**
   * Sends `count` items, the concatenation of their msgpack encodings. The sink may keep `items` until it is written
   * (many sinks share one buffer this way): the stream must not change those bytes afterwards.
   */
  push(items: Uint8Array, count: number): void;
  /**
   * Bytes of memory held for what was pushed and not yet handed to the kernel: the whole buffers behind the views
   * kept, each once, what it made of them (an SSE response's text), and a fixed cost per message in flight.
   */
  readonly pendingBytes: number;
  /** Ends the stream with an error code (the peer sees it after every item pushed before); no push after it. */
  end(code: ErrorCode, message: string): void;
}

/**
 * What an actor method returns (or resolves with) to push items to its caller after the reply (FORMAT.md of
 * @heapless/client, "Streams"): the server replies with `head` and the stream's id, then calls `open` with the sink
 * and `drained` whenever the sink handed some of them to the kernel; `cancel` when the caller or its connection went away.
 * Streams cross no thread: an actor in a worker cannot return one.
 */
export abstract class PushStream<T> implements Streamed<T> {
  readonly [STREAM] = true as const;
  declare readonly [STREAM_ITEM]?: T;
  /** The reply's value (an object: the server adds the stream's id as `stream`). */
  abstract readonly head: Record<string, unknown>;
  /** Starts pushing into `sink`; called once, right after the reply went out. */
  abstract open(sink: PushSink): void;
  /** The sink handed some of what it held to the kernel (its `pendingBytes` may have fallen): push more. */
  abstract drained(): void;
  /** The caller cancelled or its connection closed: push nothing more and let go of everything. Idempotent. */
  abstract cancel(): void;
}

/** Whether `value` is a {@link PushStream}. */
export function isPushStream(value: unknown): value is PushStream<unknown> {
  return (value as { [STREAM]?: unknown } | null)?.[STREAM] === true;
}
