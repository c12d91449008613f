import { Packr } from 'msgpackr';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { InPlaceDecoder, MISS, type Structures } from './in-place-decoder.js';

export type { Structures } from './in-place-decoder.js';

/**
 * msgpackr with shared structures, one per map (or reader): objects that share a shape are written as a one-byte
 * structure id followed by their field values, which is smaller and decodes 2-3x faster than plain maps. The
 * structure table is the map's own state — when an `encode` grew it (`takeGrown`), the owner posts it to readers
 * before the value can be seen, and persists it in the same engine write as the value, so every stored value stays
 * decodable.
 */
export class MsgpackCodec {
  readonly structures: Structures;
  private readonly packr: Packr;
  /** Reused options object for `unpack(buffer, { start, end })`: decoding a slice allocates no view. */
  private readonly range = { start: 0, end: 0 };
  /**
   * Values are decoded from a private copy, not from the shared segment: msgpackr's native string extractor
   * refuses SharedArrayBuffer memory (and throws, which costs microseconds per value), msgpackr decodes short
   * strings in JS only when the source ends before byte 140 (so a copy at offset 0 keeps small values on its JS
   * path), and a reader thread must decode bytes that can no longer change under it anyway. The copy is made in
   * int32 words (`scratch32` views the same memory): a 60-byte value is 16 loads and stores. Grows to the largest
   * value decoded.
   */
  private scratch: Buffer = Buffer.allocUnsafeSlow(4096);
  private scratch32 = new Int32Array(this.scratch.buffer, 0, 1024);
  /** Reads the common structured objects in place, without msgpackr (see in-place-decoder.ts). */
  private readonly fast = new InPlaceDecoder();
  private grown = false;

  /**
   * `structures`: the table persisted with the data (empty for a new map). `refresh` (readers) returns a newer table
   * when a value names a structure id this codec does not know yet.
   */
  constructor(structures: Structures, maxSharedStructures: number, refresh: (() => Structures) | null) {
    this.structures = structures;
    this.packr = new Packr({
      useRecords: true,
      // Binary fields are copied out: otherwise they would be views of the decode scratch, overwritten by the next get.
      copyBuffers: true,
      structures,
      maxSharedStructures,
      saveStructures: () => {
        this.grown = true;
        return true;
      },
      ...(refresh === null ? {} : { getStructures: refresh }),
    });
  }

  /** `value` serialized; the bytes are valid until the next `encode`. Throws ENCODE_FAILED. */
  encode(value: unknown): Uint8Array {
    try {
      return this.packr.pack(value);
    } catch (err) {
      throw new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, `value cannot be serialized: ${String(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * Decodes bytes `[start, end)` of an owner's segment (`u8`, `dv` and `i32` view it). Structured objects of the
   * common shape are read in place by `InPlaceDecoder`; anything else is copied in int32 words (the owner's segments
   * are 8-byte-aligned blocks, so the rounding stays inside the arena record's block) and decoded by msgpackr. Throws
   * DECODE_FAILED.
   */
  decode(u8: Uint8Array, dv: DataView, i32: Int32Array, start: number, end: number): unknown {
    const value = this.fast.decode(u8, dv, start, end, this.packrStructures());
    if (value !== MISS) return value;
    const first = start >>> 2;
    const count = ((end + 3) >>> 2) - first;
    let scratch32 = this.scratch32;
    if (count > scratch32.length) {
      this.scratch = Buffer.allocUnsafeSlow(Math.max(count * 4, this.scratch.length * 2));
      scratch32 = this.scratch32 = new Int32Array(this.scratch.buffer, 0, this.scratch.length >>> 2);
    }
    if (count <= 64) for (let i = 0; i < count; i++) scratch32[i] = i32[first + i]!;
    else scratch32.set(i32.subarray(first, first + count));
    const skip = start & 3;
    return this.decodeCopy(this.scratch, skip, skip + end - start);
  }

  /** The structure table msgpackr itself decodes with (it may swap the array when it reloads structures). */
  private packrStructures(): Structures {
    return (this.packr as unknown as { structures?: Structures }).structures ?? this.structures;
  }

  /** `decodeCopy` with the in-place fast path first (`dv` views the same memory as `bytes`). */
  decodePrivate(bytes: Uint8Array, dv: DataView, start: number, end: number): unknown {
    const value = this.fast.decode(bytes, dv, start, end, this.packrStructures());
    return value !== MISS ? value : this.decodeCopy(bytes, start, end);
  }

  /** Decodes `bytes[start, end)` of a buffer no other thread writes (readers copy under their seqlock first). */
  decodeCopy(bytes: Uint8Array, start: number, end: number): unknown {
    const range = this.range;
    range.start = start;
    range.end = end;
    try {
      return this.packr.unpack(bytes, range);
    } catch (err) {
      throw new OffHeapError(OffHeapErrorCodes.DECODE_FAILED, `stored bytes are not a msgpack value: ${String(err)}`, {
        cause: err,
      });
    }
  }

  /** True once if an `encode` added structures since the last call (the owner then publishes and persists them). */
  takeGrown(): boolean {
    const g = this.grown;
    this.grown = false;
    return g;
  }

  /** Readers: appends structures the owner added since (ids only ever grow; earlier ones never change). */
  update(structures: Structures): void {
    for (let i = this.structures.length; i < structures.length; i++) this.structures.push(structures[i]!);
  }

  /** The structure table as plain arrays (what is persisted and posted to readers). */
  snapshot(): Structures {
    const out: Structures = [];
    for (let i = 0; i < this.structures.length; i++) out.push(Array.from(this.structures[i]!));
    return out;
  }
}
