import {
  type ArrayType,
  arrayType,
  StructLayout as BaseStructLayout,
  type FieldLayout,
  type FieldSpec,
  readString,
  SCALAR_SIZES,
  type ScalarType,
  type StructErrors,
  type StructValue,
  type Utf8Reader,
  type Utf8Type,
  utf8Type,
} from '@heapless/struct';
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from './errors.js';
import { makeViewClass, type StructView, type ViewClass, type ViewHost } from './struct-view.js';

/**
 * Fixed-layout struct values (`@heapless/struct`'s FORMAT.md, the bytes the client sends) as the map lays them out:
 * refusals in this package's codes — a value that does not fit is FIELD_OVERFLOW, never wrapped or cut; a value of
 * the wrong JS type (or a non-integer in an integer field) is ENCODE_FAILED; a bad layout INVALID_ARGUMENT — and a
 * decoder generated for each layout.
 */

const STRUCT_ERRORS: StructErrors = Object.freeze({
  layout: invalidArgument,
  value: (message: string) => new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, message),
  overflow: (message: string) => new OffHeapError(OffHeapErrorCodes.FIELD_OVERFLOW, message),
  size: (message: string) => new OffHeapError(OffHeapErrorCodes.DECODE_FAILED, message),
});

/** Node's UTF-8 slice: no subarray, no TextDecoder call (both cost more than the short strings records hold). */
const readNodeUtf8: Utf8Reader = (u8, start, end) => Buffer.prototype.utf8Slice.call(u8, start, end);

/** A string field of at most `maxBytes` UTF-8 bytes (1..65535); otherwise INVALID_ARGUMENT. */
export function utf8(maxBytes: number): Utf8Type {
  return utf8Type(maxBytes, STRUCT_ERRORS);
}

/** A fixed-length array field of `length` (1..65535) elements of a scalar type; otherwise INVALID_ARGUMENT. */
export function array<E extends ScalarType>(element: E, length: number): ArrayType<E> {
  return arrayType(element, length, STRUCT_ERRORS);
}

type Decoder = (u8: Uint8Array, dv: DataView, off: number) => unknown;

/** A struct layout: encodes/decodes plain objects and makes flyweight views. Create with `struct({...})`. */
export class StructLayout<F extends FieldSpec> extends BaseStructLayout<F> {
  readonly #View: ViewClass;
  readonly #decoder: Decoder;

  /** Throws INVALID_ARGUMENT for an unknown type, a reserved or `_`-prefixed name, or no field at all. */
  constructor(fields: F) {
    super(fields, { errors: STRUCT_ERRORS, readUtf8: readNodeUtf8 });
    this.#decoder = makeDecoder(this.layout);
    this.#View = makeViewClass(this.layout);
  }

  /** A new view for `host` (maps call this from `map.view()`). */
  createView(host: ViewHost): StructView<F> {
    return new this.#View(this as unknown as BaseStructLayout<FieldSpec>, host) as unknown as StructView<F>;
  }

  /** Reads the record at `off` as a plain object, through the decoder generated for this layout. */
  override decodeFrom(u8: Uint8Array, dv: DataView, off: number): StructValue<F> {
    return this.#decoder(u8, dv, off) as StructValue<F>;
  }
}

const SCALAR_READ: Readonly<Record<ScalarType, (at: string) => string>> = {
  u8: (at) => `dv.getUint8(${at})`,
  i8: (at) => `dv.getInt8(${at})`,
  bool: (at) => `dv.getUint8(${at}) !== 0`,
  u16: (at) => `dv.getUint16(${at}, true)`,
  i16: (at) => `dv.getInt16(${at}, true)`,
  u32: (at) => `dv.getUint32(${at}, true)`,
  i32: (at) => `dv.getInt32(${at}, true)`,
  f32: (at) => `dv.getFloat32(${at}, true)`,
  f64: (at) => `dv.getFloat64(${at}, true)`,
  i64: (at) => `dv.getBigInt64(${at}, true)`,
  u64: (at) => `dv.getBigUint64(${at}, true)`,
};

/**
 * A decoder specialized to one layout: a single object literal with every field read at a constant offset, so
 * every decoded object has the same shape from its creation and no loop or switch runs per field (the technique
 * msgpackr uses for its record readers). Field names are quoted with JSON.stringify; offsets are numbers.
 */
function makeDecoder(layout: readonly FieldLayout[]): Decoder {
  const strings: Utf8Type[] = [];
  const parts: string[] = [];
  for (const f of layout) {
    const t = f.type;
    let expr: string;
    if (typeof t === 'string') expr = SCALAR_READ[t](`off + ${f.offset}`);
    else if (t.kind === 'utf8') {
      expr = `readString(strings[${strings.length}], u8, dv, off + ${f.offset}, readUtf8)`;
      strings.push(t);
    } else {
      const size = SCALAR_SIZES[t.element];
      const items: string[] = [];
      for (let i = 0; i < t.length; i++) items.push(SCALAR_READ[t.element](`off + ${f.offset + i * size}`));
      expr = `[${items.join(', ')}]`;
    }
    parts.push(`${JSON.stringify(f.name)}: ${expr}`);
  }
  const factory = new Function(
    'readString',
    'strings',
    'readUtf8',
    `return function decodeStruct(u8, dv, off) { return { ${parts.join(', ')} }; };`,
  ) as (rs: typeof readString, strings: Utf8Type[], readUtf8: Utf8Reader) => Decoder;
  return factory(readString, strings, readNodeUtf8);
}

/** Defines a struct layout: `struct({ id: 'u32', name: utf8(24), friends: array('u32', 8) })`. */
export function struct<F extends FieldSpec>(fields: F): StructLayout<F> {
  return new StructLayout(fields);
}
