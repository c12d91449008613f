import { checkField, readString, writeField, writeString } from './field-codec.js';
import {
  type ArrayAccess,
  type ArrayType,
  type FieldLayout,
  type FieldSpec,
  SCALAR_SIZES,
  type ScalarType,
  type StructValue,
} from './field-type.js';
import { checkScalar, readScalar, writeScalar } from './scalar.js';
import type { StructLayout } from './struct-layout.js';

/**
 * The skeleton of a flyweight struct view, which the client and `@heapless/offheap` both extend: where the record
 * is (`_u8`, `_dv`, `_off`), its layout, the field accessors and the array accessors. Reading a field decodes that
 * field alone (one DataView load for a number, no allocation); assigning a field writes it in place.
 *
 * The two sides differ only in what surrounds an access, so they override the hooks below rather than keep accessors
 * of their own: the client's views read bytes nobody else writes (no hook does anything), while the map's views
 * re-find a record whose arena space was reclaimed (`_sync`) and publish and persist each write (`_beginWrite`,
 * `_endWrite`). A hook that does nothing is inlined away by V8, so the client's reads cost what they did before.
 *
 * Fields and methods prefixed `_` belong to the implementation and are not public API (no field may take such a
 * name, see RESERVED_FIELD_NAMES).
 */
export class StructViewCore<F extends FieldSpec> {
  /** The buffer the record is in (a whole frame, an arena segment or a private copy). */
  _u8: Uint8Array;
  /** A DataView of the same buffer. */
  _dv: DataView;
  /** Byte offset of the record's first field in `_u8`. */
  _off: number;
  /** In-place accessors of array fields, made at the first access (most reads never need them). */
  _arrays: StructArray<number | bigint | boolean>[] | undefined;
  readonly _layout: StructLayout<F>;

  constructor(layout: StructLayout<F>, u8: Uint8Array, dv: DataView, off: number) {
    this._u8 = u8;
    this._dv = dv;
    this._off = off;
    this._arrays = undefined;
    this._layout = layout;
  }

  /** Runs before every read or write of the record's bytes. */
  _sync(): void {}

  /** Runs before an in-place write, after the value was checked. */
  _beginWrite(): void {}

  /** Runs after an in-place write. */
  _endWrite(): void {}

  /** The error for array index `i` outside the field `f` (of `length` elements). */
  _indexError(f: FieldLayout, i: number, length: number): Error {
    return this._layout.errors.value(`${f.name}[${i}]: index outside 0..${length - 1}`);
  }

  /** The whole record as a plain object (allocates: use fields for single reads). */
  toObject(): StructValue<F> {
    this._sync();
    return this._layout.decodeFrom(this._u8, this._dv, this._off);
  }

  /** Writes every field of `value` in place; checks them all first, so a refused value leaves the bytes as they were. */
  assign(value: StructValue<F>): void {
    this._sync();
    const layout = this._layout;
    layout.validate(value);
    this._beginWrite();
    layout.writeValidated(value, this._u8, this._dv, this._off);
    this._endWrite();
  }
}

type ViewThis = StructViewCore<FieldSpec>;

/** In-place accessor for an array field: `view.friends.get(0)`, `.set(0, 7)`, `.length`, `.toArray()`. */
export class StructArray<T extends number | bigint | boolean> implements ArrayAccess<T> {
  /** Elements in the field (fixed by the layout). */
  readonly length: number;
  readonly #view: ViewThis;
  readonly #field: FieldLayout;
  readonly #element: ScalarType;
  readonly #elementSize: number;

  constructor(view: ViewThis, field: FieldLayout) {
    const t = field.type as ArrayType;
    this.#view = view;
    this.#field = field;
    this.#element = t.element;
    this.#elementSize = SCALAR_SIZES[t.element];
    this.length = t.length;
  }

  /** Element `i`; throws the view's index error outside 0..length-1. No allocation (but an i64/u64 is a bigint). */
  get(i: number): T {
    const v = this.#view;
    v._sync();
    this.#check(i);
    return readScalar(this.#element, v._dv, v._off + this.#field.offset + i * this.#elementSize) as T;
  }

  /** Writes element `i` in place; throws for a bad index or a value of the wrong type (nothing written). */
  set(i: number, value: T): void {
    const v = this.#view;
    v._sync();
    this.#check(i);
    checkScalar(this.#element, value, `${this.#field.name}[${i}]`, v._layout.errors);
    v._beginWrite();
    writeScalar(this.#element, v._dv, v._off + this.#field.offset + i * this.#elementSize, value);
    v._endWrite();
  }

  /** Writes all elements from `values` (missing ones become zero); throws the layout's overflow if too many. */
  assign(values: ArrayLike<T>): void {
    const v = this.#view;
    v._sync();
    checkField(this.#field, values, v._layout.errors);
    v._beginWrite();
    writeField(this.#field, v._u8, v._dv, v._off, values);
    v._endWrite();
  }

  /** The elements as a new array. */
  toArray(): T[] {
    const v = this.#view;
    v._sync();
    const base = v._off + this.#field.offset;
    const out = new Array<T>(this.length);
    for (let i = 0; i < this.length; i++) out[i] = readScalar(this.#element, v._dv, base + i * this.#elementSize) as T;
    return out;
  }

  #check(i: number): void {
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) throw this.#view._indexError(this.#field, i, this.length);
  }
}

/**
 * Puts one accessor per field of `layout` on `proto` (the prototype of a class made for one layout, which keeps
 * property access monomorphic). Each accessor closes over its field's offset, so a numeric read is the `_sync` hook
 * and one DataView load at `_off + constant`. Closures rather than generated code (`new Function`), so pages with a
 * strict Content-Security-Policy can use them.
 */
export function defineFieldAccessors(proto: StructViewCore<FieldSpec>, layout: readonly FieldLayout[]): void {
  let arrayCount = 0;
  for (const f of layout) {
    const t = f.type;
    const fo = f.offset;
    let get: (this: ViewThis) => unknown;
    let set: (this: ViewThis, x: unknown) => void;
    if (typeof t === 'string') {
      get = scalarGetter(t, fo);
      set = function (this: ViewThis, x: unknown): void {
        this._sync();
        checkScalar(t, x, f.name, this._layout.errors);
        this._beginWrite();
        writeScalar(t, this._dv, this._off + fo, x);
        this._endWrite();
      };
    } else if (t.kind === 'utf8') {
      get = function (this: ViewThis): unknown {
        this._sync();
        return readString(t, this._u8, this._dv, this._off + fo, this._layout.readUtf8);
      };
      set = function (this: ViewThis, x: unknown): void {
        this._sync();
        checkField(f, x, this._layout.errors);
        this._beginWrite();
        writeString(t, this._u8, this._dv, this._off + fo, x as string);
        this._endWrite();
      };
    } else {
      const ai = arrayCount++;
      get = function (this: ViewThis): unknown {
        let arrays = this._arrays;
        if (arrays === undefined) {
          arrays = [];
          this._arrays = arrays;
        }
        let a = arrays[ai];
        if (a === undefined) {
          a = new StructArray(this, f);
          arrays[ai] = a;
        }
        return a;
      };
      set = function (this: ViewThis, x: unknown): void {
        this._sync();
        checkField(f, x, this._layout.errors);
        this._beginWrite();
        writeField(f, this._u8, this._dv, this._off, x);
        this._endWrite();
      };
    }
    Object.defineProperty(proto, f.name, { get, set, enumerable: true, configurable: false });
  }
}

/** One getter per scalar type, so each field's getter has a single DataView call site. */
function scalarGetter(t: ScalarType, fo: number): (this: ViewThis) => unknown {
  switch (t) {
    case 'u8':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getUint8(this._off + fo);
      };
    case 'i8':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getInt8(this._off + fo);
      };
    case 'bool':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getUint8(this._off + fo) !== 0;
      };
    case 'u16':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getUint16(this._off + fo, true);
      };
    case 'i16':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getInt16(this._off + fo, true);
      };
    case 'u32':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getUint32(this._off + fo, true);
      };
    case 'i32':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getInt32(this._off + fo, true);
      };
    case 'f32':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getFloat32(this._off + fo, true);
      };
    case 'f64':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getFloat64(this._off + fo, true);
      };
    case 'i64':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getBigInt64(this._off + fo, true);
      };
    case 'u64':
      return function (this: ViewThis) {
        this._sync();
        return this._dv.getBigUint64(this._off + fo, true);
      };
  }
}
