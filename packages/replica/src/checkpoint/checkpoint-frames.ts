/**
 * The stored form of a checkpoint file in the object store (FORMAT.md, "File encodings"). `lz4-frames` cuts the file
 * into chunks of at most {@link FRAME_PLAIN_BYTES} and stores each as a frame: a 9-byte header (kind, plain length,
 * stored length, little-endian) and the chunk either LZ4-compressed or as it is, whichever is smaller by enough to
 * be worth decoding. A map image holds every value uncompressed, and is most of a checkpoint's bytes; sending it
 * compressed cuts the download that a follower's start waits for, while the engine's tables (compressed already)
 * go as raw frames at the cost of one failed LZ4 pass on upload.
 *
 * Decoding is defensive, since the bytes come from the network: every length is bounded before anything is
 * allocated, a raw frame's lengths must agree, a compressed frame must decode to exactly its plain length, and a
 * stream that ends inside a frame is damage. Errors are CHECKPOINT_CORRUPT naming the object and the offset.
 */
import { createRequire } from 'node:module';
import { ReplicaError } from '../errors.js';

/** The encodings a manifest may name for a file; absent means the object holds the file's bytes as they are. */
export const LZ4_FRAMES = 'lz4-frames';
export type FileEncoding = typeof LZ4_FRAMES;

/** The most plain bytes in one frame: a chunk of the upload. */
export const FRAME_PLAIN_BYTES = 1024 * 1024;
/** A frame's header: uint8 kind, uint32le plain length, uint32le stored length. */
export const FRAME_HEADER_BYTES = 9;
/** Frame kinds. On the wire: never renumber. */
export const FrameKind = { Raw: 0, Lz4: 1 } as const;

/** A compressed frame is kept only when it saves at least 1/16 of its chunk; otherwise the chunk goes raw. */
const MIN_SAVING_SHIFT = 4;
/** lz4_flex's worst case: the input plus 1/255 of it, a few bytes, and the 4-byte length prefix. */
const lz4Bound = (plain: number) => plain + Math.ceil(plain / 255) + 16 + 4;

interface Lz4 {
  compressSync(data: Buffer): Buffer;
}
let lz4: Lz4 | undefined;
function codec(): Lz4 {
  // Loaded on first use: a process that never moves a checkpoint never loads the native binding.
  lz4 ??= createRequire(import.meta.url)('lz4-napi') as Lz4;
  return lz4;
}

/** One frame of `plain` (at most {@link FRAME_PLAIN_BYTES}): header and stored bytes, in one new buffer. */
export function encodeFrame(plain: Uint8Array): Uint8Array {
  if (plain.length > FRAME_PLAIN_BYTES) throw new RangeError(`a frame holds at most ${FRAME_PLAIN_BYTES} bytes`);
  const compressed = codec().compressSync(Buffer.from(plain.buffer, plain.byteOffset, plain.length));
  const worth = compressed.length <= plain.length - (plain.length >>> MIN_SAVING_SHIFT);
  const stored = worth ? compressed : plain;
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + stored.length);
  frame[0] = worth ? FrameKind.Lz4 : FrameKind.Raw;
  frame.writeUInt32LE(plain.length, 1);
  frame.writeUInt32LE(stored.length, 5);
  frame.set(stored, FRAME_HEADER_BYTES);
  return frame;
}

/** A web stream transform from a file's chunks to its `lz4-frames` form, counting the bytes it emits. */
export class FrameEncoder extends TransformStream<Uint8Array, Uint8Array> {
  private readonly count: { stored: number };

  constructor() {
    const count = { stored: 0 };
    super({
      transform(chunk, controller) {
        // Chunks of the upload are FRAME_PLAIN_BYTES already; a larger one is cut.
        for (let at = 0; at < chunk.length; at += FRAME_PLAIN_BYTES) {
          const frame = encodeFrame(chunk.subarray(at, at + FRAME_PLAIN_BYTES));
          count.stored += frame.length;
          controller.enqueue(frame);
        }
      },
    });
    this.count = count;
  }

  /** The bytes emitted so far: the object's size once the stream has ended. */
  get storedBytes(): number {
    return this.count.stored;
  }
}

/**
 * Decodes the `lz4-frames` form of a file as it arrives in chunks of any size (the object store's chunks do not
 * follow frames). `what` names the object in errors. LZ4 blocks are decoded here, into buffers used over and over
 * (see the constructor), rather than by the native codec, which returns each block in freshly allocated memory:
 * faulting that in page by page made its decoding of map images ~0.5 GiB/s on this project's VM, ~1.4 GiB/s here.
 */
export class FrameDecoder {
  private header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private kind = 0;
  private plainLength = 0;
  /** The stored bytes of the frame being read, once its header is complete. */
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  /** Stored bytes consumed, for the offset in errors. */
  private offset = 0;
  /**
   * `output` supplies the buffer (of at least {@link FRAME_PLAIN_BYTES}) each LZ4 frame decodes into, asked for
   * just before the frame decodes: a caller that keeps decoded frames (while their writes are in flight) hands it a
   * free one. Without it, every LZ4 frame decodes into one buffer of the decoder's own.
   */
  constructor(
    private readonly what: string,
    output?: () => Uint8Array,
  ) {
    let scratch: Uint8Array | undefined;
    this.output = output ?? (() => (scratch ??= new Uint8Array(FRAME_PLAIN_BYTES)));
  }

  private readonly output: () => Uint8Array;

  /**
   * The plain bytes of each frame that `chunk` completes, in order, one at a time: the next frame is decoded only
   * when asked for, so a caller can wait between frames (for a free output buffer). A frame's bytes are a view of
   * `chunk` (a raw frame within it), of the frame's own copy (a frame cut across chunks) or of an output buffer,
   * which without `output` is reused by the next frame: copy them to keep them.
   */
  *frames(chunk: Uint8Array): Generator<Uint8Array, void, undefined> {
    let at = 0;
    while (at < chunk.length) {
      if (this.body === undefined) {
        const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - at);
        this.header.set(chunk.subarray(at, at + take), this.headerFill);
        this.headerFill += take;
        at += take;
        if (this.headerFill === FRAME_HEADER_BYTES) this.startBody();
        continue;
      }
      const need = this.body.length - this.bodyFill;
      if (this.bodyFill === 0 && chunk.length - at >= need) {
        // The whole frame is in this chunk: decode from it, no copy.
        const frame = chunk.subarray(at, at + need);
        at += need;
        yield this.finish(frame);
        continue;
      }
      const take = Math.min(need, chunk.length - at);
      this.body.set(chunk.subarray(at, at + take), this.bodyFill);
      this.bodyFill += take;
      at += take;
      if (this.bodyFill === this.body.length) yield this.finish(this.body);
    }
  }

  /** Throws CHECKPOINT_CORRUPT when the stream ended inside a frame. */
  end(): void {
    if (this.body !== undefined || this.headerFill !== 0)
      throw this.corrupt('the object ends inside a frame (truncated)');
  }

  private startBody(): void {
    const h = this.header;
    const kind = h[0]!;
    const plain = (h[1]! | (h[2]! << 8) | (h[3]! << 16) | (h[4]! << 24)) >>> 0;
    const stored = (h[5]! | (h[6]! << 8) | (h[7]! << 16) | (h[8]! << 24)) >>> 0;
    if (kind !== FrameKind.Raw && kind !== FrameKind.Lz4) throw this.corrupt(`unknown frame kind ${kind}`);
    if (plain === 0 || plain > FRAME_PLAIN_BYTES)
      throw this.corrupt(`a frame of ${plain} plain bytes (1 to ${FRAME_PLAIN_BYTES})`);
    if (kind === FrameKind.Raw ? stored !== plain : stored < 5 || stored > lz4Bound(plain))
      throw this.corrupt(`a ${kind === FrameKind.Raw ? 'raw' : 'lz4'} frame stores ${stored} bytes for ${plain}`);
    this.kind = kind;
    this.plainLength = plain;
    this.body = new Uint8Array(stored);
    this.bodyFill = 0;
  }

  private finish(stored: Uint8Array): Uint8Array {
    let plain = stored;
    if (this.kind === FrameKind.Lz4) {
      const declared = (stored[0]! | (stored[1]! << 8) | (stored[2]! << 16) | (stored[3]! << 24)) >>> 0;
      if (declared !== this.plainLength)
        throw this.corrupt(`an lz4 block of ${declared} bytes in a frame of ${this.plainLength}`);
      const out = this.output().subarray(0, this.plainLength);
      const decoded = decodeLz4Block(stored.subarray(4), out);
      if (typeof decoded === 'string') throw this.corrupt(`an lz4 block that does not decode (${decoded})`);
      if (decoded !== this.plainLength)
        throw this.corrupt(`an lz4 block decodes to ${decoded} bytes, its frame says ${this.plainLength}`);
      plain = out;
    }
    this.offset += FRAME_HEADER_BYTES + stored.length;
    this.body = undefined;
    this.headerFill = 0;
    return plain;
  }

  private corrupt(why: string): ReplicaError {
    return new ReplicaError(
      'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
      `${this.what}: ${why}, at stored byte ${this.offset}`,
    );
  }
}

/** Copies shorter than this go byte by byte: a call to `set` or `copyWithin` costs more. */
const SHORT_COPY = 32;

/**
 * Decodes one raw LZ4 block (the block format: sequences of a token, literals, a 2-byte offset and a match, the last
 * one literals only) from `src` into `out`, and returns the bytes written, or why the block is malformed: a length
 * past either end, an offset of 0 or before the start of the output. Every read and write is bounded, so hostile
 * input ends in that answer, never outside the buffers.
 */
export function decodeLz4Block(src: Uint8Array, out: Uint8Array): number | string {
  const end = src.length;
  const cap = out.length;
  let s = 0;
  let d = 0;
  if (end === 0) return 'an empty block';
  for (;;) {
    const token = src[s++]!;
    let literals = token >>> 4;
    if (literals === 15) {
      for (let b = 255; b === 255; ) {
        if (s >= end) return 'a literal length past the end of the block';
        b = src[s++]!;
        literals += b;
      }
    }
    if (literals > end - s) return 'literals past the end of the block';
    if (literals > cap - d) return 'literals past the end of the output';
    if (literals < SHORT_COPY) for (let i = 0; i < literals; i++) out[d + i] = src[s + i]!;
    else out.set(src.subarray(s, s + literals), d);
    s += literals;
    d += literals;
    if (s === end) return d; // the last sequence: literals only
    if (end - s < 2) return 'an offset past the end of the block';
    const offset = src[s]! | (src[s + 1]! << 8);
    s += 2;
    if (offset === 0 || offset > d) return `a match offset of ${offset} at output byte ${d}`;
    let length = token & 15;
    if (length === 15) {
      for (let b = 255; b === 255; ) {
        if (s >= end) return 'a match length past the end of the block';
        b = src[s++]!;
        length += b;
      }
    }
    length += 4;
    if (length > cap - d) return 'a match past the end of the output';
    const from = d - offset;
    if (length < SHORT_COPY) {
      for (let i = 0; i < length; i++) out[d + i] = out[from + i]!;
      d += length;
    } else if (offset >= length) {
      out.copyWithin(d, from, from + length);
      d += length;
    } else {
      // The match overlaps what it writes (a repeated pattern of `offset` bytes): copy the pattern doubling.
      for (let left = length; left > 0; ) {
        const n = Math.min(left, d - from);
        out.copyWithin(d, from, from + n);
        d += n;
        left -= n;
      }
    }
    if (s === end) return 'a block that ends with a match';
  }
}
