import {
  type ArrayType,
  arrayType,
  StructLayout as BaseStructLayout,
  type FieldSpec,
  type ScalarType,
  type StructErrors,
  textDecoderReader,
  type Utf8Type,
  utf8Type,
} from '@heapless/struct';
import { HeaplessError } from '../protocol/heapless-error.js';
import { makeViewClass, type StructView, StructViewBase, type ViewClass } from './struct-view.js';

/** The client's codes for the struct format's four refusals (FORMAT.md, "Struct values"). */
const STRUCT_ERRORS: StructErrors = Object.freeze({
  layout: (message: string) => new HeaplessError('STRUCT_INVALID_LAYOUT', message),
  value: (message: string) => new HeaplessError('STRUCT_INVALID_VALUE', message),
  overflow: (message: string) => new HeaplessError('STRUCT_FIELD_OVERFLOW', message),
  size: (message: string) => new HeaplessError('STRUCT_SIZE_MISMATCH', message),
});

/** A string field of at most `maxBytes` UTF-8 bytes (1..65535). Throws STRUCT_INVALID_LAYOUT otherwise. */
export function utf8(maxBytes: number): Utf8Type {
  return utf8Type(maxBytes, STRUCT_ERRORS);
}

/** A fixed-length array field of `length` (1..65535) scalars. Throws STRUCT_INVALID_LAYOUT otherwise. */
export function array<E extends ScalarType>(element: E, length: number): ArrayType<E> {
  return arrayType(element, length, STRUCT_ERRORS);
}

/**
 * A struct layout (`@heapless/struct`'s, byte for byte what `@heapless/offheap` stores) that also lays flyweight
 * views over records' bytes. Create it with `struct({...})`. It holds no per-record state (only a TextDecoder of its
 * own), so one layout serves any number of collections and views.
 *
 * `encode`, `encodeInto` and assignments through views throw STRUCT_INVALID_VALUE or STRUCT_FIELD_OVERFLOW (nothing
 * written); `decode`, `encodeInto` and `view` throw STRUCT_SIZE_MISMATCH when fewer than `size` bytes are there.
 */
export class StructLayout<F extends FieldSpec> extends BaseStructLayout<F> {
  readonly #View: ViewClass;

  /** Throws STRUCT_INVALID_LAYOUT for an unknown type, a reserved or `_`-prefixed name, or no field at all. */
  constructor(fields: F) {
    super(fields, { errors: STRUCT_ERRORS, readUtf8: textDecoderReader(new TextDecoder()) });
    this.#View = makeViewClass(this.layout);
  }

  /**
   * A view over the record at `offset` of `bytes` (no copy: writes through the view change `bytes`), or, without
   * `bytes`, over a new zeroed record of its own (fill it in field by field, then `collection.set(id, view)`).
   * Throws STRUCT_SIZE_MISMATCH when fewer than `size` bytes are there.
   */
  view(bytes?: Uint8Array, offset = 0): StructView<F> {
    const b = bytes ?? new Uint8Array(this.size);
    if (!(offset >= 0) || b.length - offset < this.size) {
      throw STRUCT_ERRORS.size(`view: a struct of ${this.size} bytes, ${b.length - offset} bytes available`);
    }
    const u8 = new Uint8Array(b.buffer);
    return this._viewAt(u8, new DataView(b.buffer), b.byteOffset + offset, undefined);
  }

  /** Whether `x` is a view of a layout with this signature (its bytes are a record of this layout). */
  isView(x: unknown): x is StructView<F> {
    return x instanceof StructViewBase && (x as StructViewBase<FieldSpec>)._layout.signature === this.signature;
  }

  /** The `size` bytes `view` reads, as a view of them (no copy). */
  bytesOf(view: StructView<F>): Uint8Array {
    const v = view as StructViewBase<F>;
    return v._u8.subarray(v._off, v._off + this.size);
  }

  /** A view at absolute `off` of the whole-buffer `u8`/`dv` (collections reuse one pair per received frame). */
  _viewAt(u8: Uint8Array, dv: DataView, off: number, key: string | undefined): StructView<F> {
    return new this.#View(this as unknown as BaseStructLayout<FieldSpec>, u8, dv, off, key) as unknown as StructView<F>;
  }
}

/** Defines a struct layout: `struct({ id: 'u32', name: utf8(24), friends: array('u32', 8) })`. */
export function struct<F extends FieldSpec>(fields: F): StructLayout<F> {
  return new StructLayout(fields);
}
