/**
 * The records of heapless over a raw TCP (or TLS) stream (FORMAT.md, "TCP"). Every record starts with a big-endian
 * u32 header: with its top bit clear it is a data record of that many bytes, the frame exactly as a WebSocket binary
 * message carries it (0 bytes: a heartbeat); with its top bit set it is a close record of `header & 0x7fffffff` bytes,
 * a u16 close code and the UTF-8 reason, as a WebSocket close frame carries them. The client opens with a preface:
 * the magic `HEAPLESS`, the protocol version byte, a u16 token length and the token's UTF-8 bytes.
 *
 * Platform-independent (no Node modules): the server and the Node client both use it.
 */
import { HeaplessError } from '../protocol/heapless-error.js';

/** The preface's first bytes: ASCII `HEAPLESS`. */
export const TCP_MAGIC = new Uint8Array([0x48, 0x45, 0x41, 0x50, 0x4c, 0x45, 0x53, 0x53]);
/** The protocol version a preface names (the `1` of `heapless.v1`). */
export const TCP_VERSION = 1;
/** Bytes of the preface before its token: magic, version, u16 token length. */
export const TCP_PREFACE_HEAD = TCP_MAGIC.length + 1 + 2;
/** Largest token a preface carries (its length is a u16). */
export const TCP_MAX_TOKEN_BYTES = 0xffff;
/** Largest close record payload: a u16 code and a reason of up to 123 bytes, as in a WebSocket close frame. */
export const TCP_MAX_CLOSE_BYTES = 125;
/** Bytes of a record header. */
export const TCP_HEADER_BYTES = 4;

const CLOSE_BIT = 0x8000_0000;
const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });

/** The preface a client sends first, presenting `token` (none: an empty one). */
export function encodePreface(token: string | undefined): Uint8Array {
  const t = encoder.encode(token ?? '');
  if (t.length > TCP_MAX_TOKEN_BYTES) {
    throw new HeaplessError('BAD_ARGUMENTS', `a token over TCP is at most ${TCP_MAX_TOKEN_BYTES} bytes`);
  }
  const b = new Uint8Array(TCP_PREFACE_HEAD + t.length);
  b.set(TCP_MAGIC, 0);
  b[TCP_MAGIC.length] = TCP_VERSION;
  new DataView(b.buffer).setUint16(TCP_MAGIC.length + 1, t.length);
  b.set(t, TCP_PREFACE_HEAD);
  return b;
}

/** The header of a data record of `length` bytes. */
export function dataHeader(length: number): Uint8Array {
  const b = new Uint8Array(TCP_HEADER_BYTES);
  new DataView(b.buffer).setUint32(0, length);
  return b;
}

/** A heartbeat: an empty data record. */
export const HEARTBEAT_RECORD = new Uint8Array(TCP_HEADER_BYTES);

/** A close record of `code` and `reason` (cut to what fits). */
export function encodeClose(code: number, reason: string): Uint8Array {
  let r = encoder.encode(reason);
  if (r.length > TCP_MAX_CLOSE_BYTES - 2) r = r.subarray(0, TCP_MAX_CLOSE_BYTES - 2);
  const b = new Uint8Array(TCP_HEADER_BYTES + 2 + r.length);
  const v = new DataView(b.buffer);
  v.setUint32(0, (CLOSE_BIT | (2 + r.length)) >>> 0);
  v.setUint16(4, code);
  b.set(r, 6);
  return b;
}

/** One record read: a frame (`bytes`), a heartbeat (empty `bytes`), or a close. */
export type TcpRecord = { close: false; bytes: Uint8Array } | { close: true; code: number; reason: string };

/** Why a stream of records was refused: the close code and reason to answer with. */
export class TcpProtocolError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Cuts a byte stream into records. Bytes are kept only up to the end of the record being read, and a header that
 * announces more than `maxFrameBytes` is refused as soon as its 4 bytes are in, before any of the record is kept.
 * A record that lies within one chunk is a view of it, not a copy.
 */
export class TcpRecordReader {
  readonly #maxFrameBytes: number;
  #chunks: Uint8Array[] = [];
  #buffered = 0;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Bytes received and not yet taken as records. */
  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /**
   * The client's preface, once whole: the token it presents (undefined for none, or for bytes that are not UTF-8,
   * which match no token a server can be given); null while incomplete. Throws {@link TcpProtocolError}
   * (1002 `UNSUPPORTED_PROTOCOL`) for bytes that are not a heapless preface of this version, as soon as they show it.
   */
  preface(): { token: string | undefined } | null {
    const n = Math.min(this.#buffered, TCP_MAGIC.length + 1);
    const start = this.#peek(n);
    for (let i = 0; i < n; i++) {
      const want = i < TCP_MAGIC.length ? TCP_MAGIC[i] : TCP_VERSION;
      if (start[i] !== want) {
        throw new TcpProtocolError(1002, 'UNSUPPORTED_PROTOCOL', 'not a heapless v1 preface');
      }
    }
    if (this.#buffered < TCP_PREFACE_HEAD) return null;
    const head = this.#peek(TCP_PREFACE_HEAD);
    const length = (head[TCP_PREFACE_HEAD - 2] << 8) | head[TCP_PREFACE_HEAD - 1];
    if (this.#buffered < TCP_PREFACE_HEAD + length) return null;
    const all = this.#take(TCP_PREFACE_HEAD + length);
    if (length === 0) return { token: undefined };
    try {
      return { token: strictDecoder.decode(all.subarray(TCP_PREFACE_HEAD)) };
    } catch {
      return { token: undefined };
    }
  }

  /** The next whole record, or null while it is incomplete. Throws {@link TcpProtocolError} for a bad header. */
  next(): TcpRecord | null {
    if (this.#buffered < TCP_HEADER_BYTES) return null;
    const first = this.#chunks[0];
    if (first.length >= TCP_HEADER_BYTES && first[0] < 0x80) {
      // The usual case, a data record whose header lies in one chunk: read in place, one view made.
      const length = ((first[0] << 24) | (first[1] << 16) | (first[2] << 8) | first[3]) >>> 0;
      const end = TCP_HEADER_BYTES + length;
      if (length <= this.#maxFrameBytes && first.length >= end) {
        this.#buffered -= end;
        if (first.length === end) this.#chunks.shift();
        else this.#chunks[0] = first.subarray(end);
        return { close: false, bytes: first.subarray(TCP_HEADER_BYTES, end) };
      }
    }
    const h = this.#peek(TCP_HEADER_BYTES);
    const header = ((h[0] << 24) | (h[1] << 16) | (h[2] << 8) | h[3]) >>> 0;
    const close = header >= CLOSE_BIT;
    const length = close ? header - CLOSE_BIT : header;
    if (close ? length < 2 || length > TCP_MAX_CLOSE_BYTES : length > this.#maxFrameBytes) {
      throw close
        ? new TcpProtocolError(1007, 'BAD_FRAME', `a close record of ${length} bytes`)
        : new TcpProtocolError(
            1009,
            'FRAME_TOO_LARGE',
            `a frame of ${length} bytes exceeds the limit of ${this.#maxFrameBytes}`,
          );
    }
    if (this.#buffered < TCP_HEADER_BYTES + length) return null;
    const record = this.#take(TCP_HEADER_BYTES + length).subarray(TCP_HEADER_BYTES);
    if (!close) return { close: false, bytes: record };
    const code = (record[0] << 8) | record[1];
    let reason = '';
    try {
      reason = strictDecoder.decode(record.subarray(2));
    } catch {}
    return { close: true, code, reason };
  }

  /** The first `n` buffered bytes (n <= buffered), without taking them. */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let p = 0;
    for (const c of this.#chunks) {
      if (p === n) break;
      const part = c.subarray(0, n - p);
      out.set(part, p);
      p += part.length;
    }
    return out;
  }

  /** Takes the first `n` buffered bytes (n <= buffered): a view when they lie in one chunk, else a copy. */
  #take(n: number): Uint8Array {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first.length >= n) {
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let p = 0;
    while (p < n) {
      const c = this.#chunks[0];
      const want = n - p;
      if (c.length <= want) {
        out.set(c, p);
        p += c.length;
        this.#chunks.shift();
      } else {
        out.set(c.subarray(0, want), p);
        this.#chunks[0] = c.subarray(want);
        p = n;
      }
    }
    return out;
  }
}
