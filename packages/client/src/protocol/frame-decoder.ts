import { HeaplessError } from './heapless-error.js';
import { HELLO_ID, MAX_CALL_ID } from './limits.js';
import { MsgpackDecoder } from './msgpack-decoder.js';

/** One call as it arrives: the id is checked; `method` and `args` are checked by the dispatcher, per call. */
export type CallMessage = [id: number, method: unknown, args: unknown];
/**
 * One message of a reply frame: `[id, result]` on success, `[id, wireCode, message]` on failure; with id 0, the
 * hello `[0, hello]`, a stream's items `[0, stream, items]` or its end `[0, stream, wireCode, message]`.
 */
export type ReplyMessage =
  | [id: number, result: unknown]
  | [id: number, code: number, message: string]
  | [id: 0, stream: number, items: unknown[]]
  | [id: 0, stream: number, code: number, message: string];

/** The limits a server announces in its hello, the first message it sends (id 0). */
export interface ServerHello {
  /** Protocol version, 1. */
  v: number;
  maxFrameBytes: number;
  maxCallsPerFrame: number;
  maxInFlight: number;
  /** The methods a client may call (the actor's exposed ones); a ref offers exactly these. Absent: not said. */
  methods?: string[];
  /** Those of `methods` whose call opens a stream of items pushed after the reply (FORMAT.md, "Streams"). */
  streams?: string[];
}

function isId(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= HELLO_ID && x <= MAX_CALL_ID;
}

function isStreamId(x: unknown): x is number {
  return isId(x) && x !== 0;
}

/** Decodes frames (FORMAT.md). Values of msgpack bin type come back as views of `bytes`, not copies. */
export class FrameDecoder {
  readonly #decoder = new MsgpackDecoder();

  /**
   * Decodes a call frame. Throws `HeaplessError('BAD_FRAME')` when `bytes` is not msgpack, not an array, or holds a
   * message that is not an array of three with a valid id (such a message cannot be answered), and
   * `HeaplessError('TOO_MANY_CALLS')` when it holds more than `maxCalls` messages.
   */
  decodeCalls(bytes: Uint8Array, maxCalls: number): CallMessage[] {
    const frame = this.#decode(bytes);
    if (frame.length > maxCalls) {
      throw new HeaplessError('TOO_MANY_CALLS', `${frame.length} calls in one frame, the limit is ${maxCalls}`);
    }
    for (let i = 0; i < frame.length; i++) {
      const m = frame[i];
      if (!Array.isArray(m) || m.length !== 3 || !isId(m[0]) || m[0] === HELLO_ID) {
        throw new HeaplessError('BAD_FRAME', `message ${i} of the frame is not [id >= 1, method, args]`);
      }
    }
    return frame as CallMessage[];
  }

  /** Decodes a reply frame; throws `HeaplessError('BAD_FRAME')` when it is not one. */
  decodeReplies(bytes: Uint8Array): ReplyMessage[] {
    const frame = this.#decode(bytes);
    for (let i = 0; i < frame.length; i++) {
      const m = frame[i];
      if (!Array.isArray(m) || !isId(m[0])) {
        throw new HeaplessError('BAD_FRAME', `reply ${i} of the frame is not [id, result] or [id, code, message]`);
      }
      const ok =
        m[0] === HELLO_ID
          ? m.length === 2 ||
            (m.length === 3 && isStreamId(m[1]) && Array.isArray(m[2])) ||
            (m.length === 4 && isStreamId(m[1]) && typeof m[2] === 'number' && typeof m[3] === 'string')
          : m.length === 2 || (m.length === 3 && typeof m[1] === 'number' && typeof m[2] === 'string');
      if (!ok) {
        throw new HeaplessError(
          'BAD_FRAME',
          `reply ${i} of the frame is not [id, result], [id, code, message] or a stream's [0, stream, ...]`,
        );
      }
    }
    return frame as ReplyMessage[];
  }

  #decode(bytes: Uint8Array): unknown[] {
    let frame: unknown;
    try {
      frame = this.#decoder.unpack(bytes);
    } catch (cause) {
      throw new HeaplessError('BAD_FRAME', 'frame is not msgpack', { cause });
    }
    if (!Array.isArray(frame)) throw new HeaplessError('BAD_FRAME', 'frame is not a msgpack array');
    return frame;
  }
}

/** Whether a decoded hello has the documented shape. */
export function isServerHello(x: unknown): x is ServerHello {
  if (typeof x !== 'object' || x === null) return false;
  const h = x as Record<string, unknown>;
  return (
    h.v === 1 &&
    typeof h.maxFrameBytes === 'number' &&
    typeof h.maxCallsPerFrame === 'number' &&
    typeof h.maxInFlight === 'number' &&
    (h.methods === undefined || (Array.isArray(h.methods) && h.methods.every((m) => typeof m === 'string'))) &&
    (h.streams === undefined || (Array.isArray(h.streams) && h.streams.every((m) => typeof m === 'string')))
  );
}
