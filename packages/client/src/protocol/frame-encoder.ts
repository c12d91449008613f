import { Packr, RESET_BUFFER_MODE } from 'msgpackr';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

/** 64 KiB holds a frame of a few hundred small calls without growing. */
const INITIAL_BYTES = 64 * 1024;
/** A buffer that grew past 1 MiB for one huge frame is not kept, so one big call does not pin memory for good. */
const MAX_KEPT_BYTES = 1024 * 1024;
/**
 * msgpackr's target buffer and write position are module-wide. After each encode we push the position past the end
 * so that the next `pack` anywhere else in this realm starts a fresh buffer instead of writing into ours (which we
 * overwrite on our next encode).
 */
const PAST_THE_END = 0x7fff_fff0;

/** msgpackr writes strings with Buffer's utf8Write when it runs on Node, so the buffer must be a Buffer there. */
function allocate(bytes: number): Uint8Array {
  return typeof Buffer === 'function' ? Buffer.allocUnsafeSlow(bytes) : new Uint8Array(bytes);
}

/**
 * Encodes frames (FORMAT.md) into one buffer owned by one connection and reused for every frame.
 *
 *   call frame  = msgpack array of [id: uint32 >= 1, method: str, args: array]
 *   reply frame = msgpack array of [id, result] | [id, errCode: uint, message: str]
 *
 * `Uint8Array` values anywhere in a frame are written as msgpack bin, byte for byte.
 */
export class FrameEncoder {
  readonly #packr = new Packr(MSGPACK_OPTIONS);
  #buf: Uint8Array = allocate(INITIAL_BYTES);

  /**
   * Encodes `frame` and returns a view of this encoder's buffer, valid until the next call of `encode`: the caller
   * must hand it to something that copies it at once (a browser `WebSocket.send`, or `ws` on the client side, which
   * masks into a new buffer), or call {@link encodeDetached}. Throws what msgpackr throws for a value it cannot
   * encode (a BigInt beyond 64 bits, a cycle).
   */
  encode(frame: readonly unknown[]): Uint8Array {
    const packr = this.#packr;
    packr.useBuffer(this.#buf);
    let out: Uint8Array;
    try {
      out = packr.pack(frame, RESET_BUFFER_MODE) as Uint8Array;
    } finally {
      packr.position = PAST_THE_END; // even when a value cannot be encoded
    }
    // msgpackr grew a new buffer for a big frame: keep it if it is not too big.
    if (out.buffer !== this.#buf.buffer && out.buffer.byteLength <= MAX_KEPT_BYTES) {
      this.#buf = typeof Buffer === 'function' ? Buffer.from(out.buffer) : new Uint8Array(out.buffer);
    }
    return out;
  }

  /** Encodes `frame` into a fresh copy the caller owns (a server socket keeps a reference until it is written). */
  encodeDetached(frame: readonly unknown[]): Uint8Array {
    const out = this.encode(frame);
    // Buffer#slice is a view, not a copy: copy explicitly.
    return typeof Buffer === 'function' ? Buffer.from(out) : out.slice();
  }
}
