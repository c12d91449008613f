import {
  type ArrayAccess,
  type ArrayType,
  checkField,
  checkScalar,
  type FieldLayout,
  type FieldSpec,
  readScalar,
  readString,
  SCALAR_SIZES,
  type ScalarType,
  type StructLayout,
  type StructValue,
  type ViewFields,
  writeField,
  writeScalar,
  writeString,
} from '@heapless/struct';

/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = ViewFields<F> & StructViewBase<F>;

/**
 * A flyweight over one struct record's bytes, wherever they are: the reply frame a value arrived in, or a buffer of
 * the caller's. Reading a field decodes that field alone (one DataView load for a number, no allocation); assigning
 * a field writes it in place, in these bytes only (send them with `collection.set(id, view)`).
 *
 * A view never owns its bytes and never copies them: it keeps the frame (or buffer) it reads alive for as long as
 * it is referenced. Fields prefixed `_` belong to the implementation and are not public API.
 */
export class StructViewBase<F extends FieldSpec> {
  /** The whole buffer the record is in (not just the record), so a view over a frame needs no subarray. */
  _u8: Uint8Array;
  /** A DataView of the same whole buffer; shared by every view over the same frame. */
  _dv: DataView;
  /** Byte offset of the record's first field in `_u8`. */
  _off: number;
  /** The id the record was read under (collections set it), or undefined. */
  _key: string | undefined;
  /** In-place accessors of array fields, made at the first access (most reads never need them). */
  _arrays: StructArray<number | bigint | boolean>[] | undefined;
  readonly _layout: StructLayout<F>;

  constructor(layout: StructLayout<F>, u8: Uint8Array, dv: DataView, off: number, key: string | undefined) {
    this._u8 = u8;
    this._dv = dv;
    this._off = off;
    this._key = key;
    this._arrays = undefined;
    this._layout = layout;
  }

  /** The id this record was read under (`get`, `getMany`, `scan` set it); undefined for a view made by the layout. */
  get key(): string | undefined {
    return this._key;
  }

  /** The whole record as a plain object (allocates: use fields for single reads). */
  toObject(): StructValue<F> {
    return this._layout.decodeFrom(this._u8, this._dv, this._off);
  }

  /** Writes every field of `value` in place; checks them all first, so a refused value leaves the bytes as they were. */
  assign(value: StructValue<F>): void {
    this._layout.encodeAt(value, this._u8, this._dv, this._off);
  }
}

/** In-place accessor for an array field: `view.friends.get(0)`, `.set(0, 7)`, `.length`, `.toArray()`. */
export class StructArray<T extends number | bigint | boolean> implements ArrayAccess<T> {
  /** Elements in the field (fixed by the layout). */
  readonly length: number;
  readonly #view: StructViewBase<FieldSpec>;
  readonly #field: FieldLayout;
  readonly #element: ScalarType;
  readonly #elementSize: number;

  constructor(view: StructViewBase<FieldSpec>, field: FieldLayout) {
    const t = field.type as ArrayType;
    this.#view = view;
    this.#field = field;
    this.#element = t.element;
    this.#elementSize = SCALAR_SIZES[t.element];
    this.length = t.length;
  }

  /** Element `i`; throws STRUCT_INVALID_VALUE outside 0..length-1. No allocation (but an i64/u64 is a bigint). */
  get(i: number): T {
    this.#check(i);
    const v = this.#view;
    return readScalar(this.#element, v._dv, v._off + this.#field.offset + i * this.#elementSize) as T;
  }

  /** Writes element `i` in place; throws STRUCT_INVALID_VALUE for a bad index or a value of the wrong type. */
  set(i: number, value: T): void {
    this.#check(i);
    const v = this.#view;
    checkScalar(this.#element, value, `${this.#field.name}[${i}]`, v._layout.errors);
    writeScalar(this.#element, v._dv, v._off + this.#field.offset + i * this.#elementSize, value);
  }

  /** Writes all elements from `values` (missing ones become zero); throws STRUCT_FIELD_OVERFLOW if too many. */
  assign(values: ArrayLike<T>): void {
    const v = this.#view;
    checkField(this.#field, values, v._layout.errors);
    writeField(this.#field, v._u8, v._dv, v._off, values);
  }

  /** The elements as a new array. */
  toArray(): T[] {
    const v = this.#view;
    const base = v._off + this.#field.offset;
    const out = new Array<T>(this.length);
    for (let i = 0; i < this.length; i++) out[i] = readScalar(this.#element, v._dv, base + i * this.#elementSize) as T;
    return out;
  }

  #check(i: number): void {
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) {
      throw this.#view._layout.errors.value(`${this.#field.name}[${i}]: index outside 0..${this.length - 1}`);
    }
  }
}

type ViewThis = StructViewBase<FieldSpec>;

/** The class `makeViewClass` makes, typed without its layout's fields (so a layout stays covariant in them). */
export type ViewClass = new (
  layout: StructLayout<FieldSpec>,
  u8: Uint8Array,
  dv: DataView,
  off: number,
  key: string | undefined,
) => StructViewBase<FieldSpec>;

/**
 * A view class with one accessor per field on its prototype. Each accessor closes over its field's offset, so a
 * numeric read is one DataView load at `_off + constant`; a class per layout keeps property access monomorphic.
 * Closures rather than generated code (`new Function`), so pages with a strict Content-Security-Policy can use it.
 */
export function makeViewClass(layout: readonly FieldLayout[]): ViewClass {
  class View extends StructViewBase<FieldSpec> {}
  let arrayCount = 0;
  for (const f of layout) {
    const t = f.type;
    const fo = f.offset;
    let get: (this: ViewThis) => unknown;
    let set: (this: ViewThis, x: unknown) => void;
    if (typeof t === 'string') {
      get = scalarGetter(t, fo);
      set = function (this: ViewThis, x: unknown): void {
        checkScalar(t, x, f.name, this._layout.errors);
        writeScalar(t, this._dv, this._off + fo, x);
      };
    } else if (t.kind === 'utf8') {
      get = function (this: ViewThis): unknown {
        return readString(t, this._u8, this._dv, this._off + fo, this._layout.readUtf8);
      };
      set = function (this: ViewThis, x: unknown): void {
        checkField(f, x, this._layout.errors);
        writeString(t, this._u8, this._dv, this._off + fo, x as string);
      };
    } else {
      const ai = arrayCount++;
      get = function (this: ViewThis): unknown {
        const arrays = this._arrays ?? [];
        this._arrays = arrays;
        let a = arrays[ai];
        if (a === undefined) {
          a = new StructArray(this, f);
          arrays[ai] = a;
        }
        return a;
      };
      set = function (this: ViewThis, x: unknown): void {
        checkField(f, x, this._layout.errors);
        writeField(f, this._u8, this._dv, this._off, x);
      };
    }
    Object.defineProperty(View.prototype, f.name, { get, set, enumerable: true, configurable: false });
  }
  return View;
}
/** One getter per scalar type, so each field's getter has a single DataView call site. */
function scalarGetter(t: ScalarType, fo: number): (this: ViewThis) => unknown {
  switch (t) {
    case 'u8':
      return function (this: ViewThis) {
        return this._dv.getUint8(this._off + fo);
      };
    case 'i8':
      return function (this: ViewThis) {
        return this._dv.getInt8(this._off + fo);
      };
    case 'bool':
      return function (this: ViewThis) {
        return this._dv.getUint8(this._off + fo) !== 0;
      };
    case 'u16':
      return function (this: ViewThis) {
        return this._dv.getUint16(this._off + fo, true);
      };
    case 'i16':
      return function (this: ViewThis) {
        return this._dv.getInt16(this._off + fo, true);
      };
    case 'u32':
      return function (this: ViewThis) {
        return this._dv.getUint32(this._off + fo, true);
      };
    case 'i32':
      return function (this: ViewThis) {
        return this._dv.getInt32(this._off + fo, true);
      };
    case 'f32':
      return function (this: ViewThis) {
        return this._dv.getFloat32(this._off + fo, true);
      };
    case 'f64':
      return function (this: ViewThis) {
        return this._dv.getFloat64(this._off + fo, true);
      };
    case 'i64':
      return function (this: ViewThis) {
        return this._dv.getBigInt64(this._off + fo, true);
      };
    case 'u64':
      return function (this: ViewThis) {
        return this._dv.getBigUint64(this._off + fo, true);
      };
  }
}
