/**
 * The map's value codec: a msgpack map's `MsgpackCodec` (msgpackr with shared structures, and the in-place decoder)
 * or a struct map's `StructLayout` (a fixed layout, encoded into one reused record of scratch). One per map.
 */
import type { FieldSpec, StructValue } from '@heapless/struct';
import type { MsgpackCodec, Structures } from '../codec/msgpack-codec.js';
import { invalidArgument } from '../errors.js';
import type { Arena } from '../memory/arena.js';
import type { StructLayout } from '../struct.js';

export class MapCodec<F extends FieldSpec = FieldSpec> {
  /** Struct maps: one record's worth of scratch, so `encode` validates and encodes before the arena is touched. */
  private readonly scratch: Uint8Array;
  private readonly scratchView: DataView;

  /** Exactly one of the two is given. */
  constructor(
    readonly structType: StructLayout<F> | null,
    readonly msgpack: MsgpackCodec | null,
  ) {
    this.scratch = new Uint8Array(structType?.size ?? 0);
    this.scratchView = new DataView(this.scratch.buffer);
  }

  /** `value`'s bytes, valid until the next `encode`. Throws ENCODE_FAILED, FIELD_OVERFLOW. */
  encode(value: unknown): Uint8Array {
    if (this.structType === null) return this.msgpack!.encode(value);
    this.structType.encodeAt(value as StructValue<F>, this.scratch, this.scratchView, 0);
    return this.scratch;
  }

  /** True once after an `encode` added msgpackr structures (the map then publishes and persists them). */
  takeGrown(): boolean {
    return this.msgpack?.takeGrown() === true;
  }

  /** Throws INVALID_ARGUMENT unless `bytes` can be a stored value (a struct map's must be one record). */
  checkBytes(bytes: Uint8Array): void {
    if (!(bytes instanceof Uint8Array)) throw invalidArgument('setBytes needs a Uint8Array value');
    if (this.structType !== null && bytes.length !== this.structType.size) {
      throw invalidArgument(`struct values are ${this.structType.size} bytes, got ${bytes.length}`);
    }
  }

  /** The value of `len` bytes at `start` in segment `seg` of `arena`. Throws DECODE_FAILED. */
  decode(arena: Arena, seg: number, start: number, len: number): unknown {
    if (this.structType !== null) return this.structType.decodeFrom(arena.u8[seg]!, arena.dv[seg]!, start);
    return this.msgpack!.decode(arena.u8[seg]!, arena.dv[seg]!, arena.i32[seg]!, start, start + len);
  }

  /** The msgpackr structure table as plain arrays (empty for a struct map): what is persisted and posted. */
  structures(): Structures {
    return this.msgpack === null ? [] : this.msgpack.snapshot();
  }
}
