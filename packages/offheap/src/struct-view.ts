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
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from './errors.js';

/**
 * Flyweight views over struct records in the map's arena (or a reader's private copy). Unlike the client's views,
 * which read bytes nobody else writes, these check their host's reclaim count before each access: arena space can be
 * reclaimed under them, and the host re-finds the record (or throws VIEW_NOT_POSITIONED). Writes go through the
 * host, which publishes them to readers and persists them.
 */

/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = ViewFields<F> & StructViewBase<F>;

/**
 * What a view is positioned by: an `OffHeapMap` (read-write, persisted) or an attached reader (read-only, over a
 * private copy). `reclaims` counts the host's reclaimed arena blocks, so a view can tell its record may have moved.
 */
export interface ViewHost {
  readonly reclaims: number;
  /** Re-positions `view` on the current record of its key, or throws VIEW_NOT_POSITIONED. */
  revalidate<G extends FieldSpec>(view: StructViewBase<G>): void;
  /** Called before an in-place write (readers throw READ_ONLY). */
  beginWrite<G extends FieldSpec>(view: StructViewBase<G>): void;
  /** Called after an in-place write (the map publishes it to readers and persists the record). */
  endWrite<G extends FieldSpec>(view: StructViewBase<G>): void;
}

/** State and methods shared by every view; fields prefixed `_` belong to the host and are not public API. */
export class StructViewBase<F extends FieldSpec> {
  /** The segment (or private copy) the record is in. */
  _u8: Uint8Array;
  _dv: DataView;
  /** Byte offset of the struct's first field in `_u8`. */
  _off: number;
  /** The host's `reclaims` when the view was positioned; -1 when not positioned. */
  _reclaims: number;
  /** The key the view is positioned on (host-specific), undefined when not positioned. */
  _key: unknown;
  /** Arena location of the record (host-specific). */
  _loc: number;
  /** Hash of the key (for the host's reader lock). */
  _hash: number;
  readonly _host: ViewHost;
  readonly _type: StructLayout<FieldSpec>;
  readonly _arrays: StructArray<number | bigint | boolean>[];

  constructor(type: StructLayout<FieldSpec>, host: ViewHost) {
    this._u8 = EMPTY_U8;
    this._dv = EMPTY_DV;
    this._off = 0;
    this._reclaims = -1;
    this._key = undefined;
    this._loc = 0;
    this._hash = 0;
    this._host = host;
    this._type = type;
    this._arrays = [];
    for (const f of type.layout) {
      if (typeof f.type === 'object' && f.type.kind === 'array') this._arrays.push(new StructArray(this, f));
    }
  }

  /** Points the view at `off` in `u8`/`dv`; used by hosts. */
  _position(u8: Uint8Array, dv: DataView, off: number, seen: number, key: unknown, loc: number, hash: number): void {
    this._u8 = u8;
    this._dv = dv;
    this._off = off;
    this._reclaims = seen;
    this._key = key;
    this._loc = loc;
    this._hash = hash;
  }

  /** True if the view is positioned on a record. */
  get positioned(): boolean {
    return this._reclaims !== -1;
  }

  /** The key the view is positioned on. Throws VIEW_NOT_POSITIONED if none. */
  get key(): unknown {
    if (this._reclaims === -1) throw notPositioned();
    return this._key;
  }

  /** The whole record as a plain object (allocates). */
  toObject(): StructValue<F> {
    if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
    return this._type.decodeFrom(this._u8, this._dv, this._off) as StructValue<F>;
  }

  /** Writes every field of `value` in place (one persisted write); a refused value changes nothing. */
  assign(value: StructValue<F>): void {
    if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
    const type = this._type;
    type.validate(value as StructValue<FieldSpec>);
    this._host.beginWrite(this);
    type.writeValidated(value as StructValue<FieldSpec>, this._u8, this._dv, this._off);
    this._host.endWrite(this);
  }
}

const EMPTY_U8 = new Uint8Array(0);
const EMPTY_DV = new DataView(new ArrayBuffer(0));

function notPositioned(): OffHeapError {
  return new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, 'struct view is not positioned on a record');
}

export function viewNotPositioned(key: unknown): OffHeapError {
  return new OffHeapError(
    OffHeapErrorCodes.VIEW_NOT_POSITIONED,
    `struct view's key ${String(key)} is no longer in the map (deleted or the map was cleared)`,
  );
}

/** In-place accessor for an array field: `view.friends.get(0)`, `.set(0, 7)`, `.length`, `.toArray()`. */
export class StructArray<T extends number | bigint | boolean> implements ArrayAccess<T> {
  readonly length: number;
  private readonly view: StructViewBase<FieldSpec>;
  private readonly field: FieldLayout;
  private readonly element: ScalarType;
  private readonly elementSize: number;

  constructor(view: StructViewBase<FieldSpec>, field: FieldLayout) {
    const t = field.type as ArrayType;
    this.view = view;
    this.field = field;
    this.element = t.element;
    this.elementSize = SCALAR_SIZES[t.element];
    this.length = t.length;
  }

  /** Element `i`; throws INVALID_ARGUMENT outside 0..length-1. */
  get(i: number): T {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) throw indexError(i, this.length);
    return readScalar(this.element, v._dv, v._off + this.field.offset + i * this.elementSize) as T;
  }

  /** Writes element `i` in place (one persisted write). */
  set(i: number, value: T): void {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) throw indexError(i, this.length);
    checkScalar(this.element, value, `${this.field.name}[${i}]`, v._type.errors);
    v._host.beginWrite(v);
    writeScalar(this.element, v._dv, v._off + this.field.offset + i * this.elementSize, value);
    v._host.endWrite(v);
  }

  /** Writes all elements in place from `values` (missing ones become zero); one persisted write. */
  assign(values: ArrayLike<T>): void {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    checkField(this.field, values, v._type.errors);
    v._host.beginWrite(v);
    writeField(this.field, v._u8, v._dv, v._off, values);
    v._host.endWrite(v);
  }

  /** The elements as a new array. */
  toArray(): T[] {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    const out: T[] = [];
    const base = v._off + this.field.offset;
    for (let i = 0; i < this.length; i++) out.push(readScalar(this.element, v._dv, base + i * this.elementSize) as T);
    return out;
  }
}

function indexError(i: number, n: number): OffHeapError {
  return invalidArgument(`array index ${i} is outside 0..${n - 1}`);
}

/** The class `makeViewClass` makes, typed without its layout's fields. */
export type ViewClass = new (type: StructLayout<FieldSpec>, host: ViewHost) => StructViewBase<FieldSpec>;

/**
 * A view class with one accessor per field on its prototype. Each accessor closes over its field's offset, so a
 * read is: check the reclaim count, one DataView load. Classes are per struct type, so property access stays monomorphic.
 */
export function makeViewClass(layout: readonly FieldLayout[]): ViewClass {
  class View extends StructViewBase<FieldSpec> {}
  let arrayIndex = 0;
  for (const f of layout) {
    const t = f.type;
    const fo = f.offset;
    let get: (this: StructViewBase<FieldSpec>) => unknown;
    let set: (this: StructViewBase<FieldSpec>, x: unknown) => void;
    if (typeof t === 'string') {
      get = scalarGetter(t, fo);
      set = function (this: StructViewBase<FieldSpec>, x: unknown): void {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        checkScalar(t, x, f.name, this._type.errors);
        this._host.beginWrite(this);
        writeScalar(t, this._dv, this._off + fo, x);
        this._host.endWrite(this);
      };
    } else if (t.kind === 'utf8') {
      get = function (this: StructViewBase<FieldSpec>): unknown {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return readString(t, this._u8, this._dv, this._off + fo, this._type.readUtf8);
      };
      set = function (this: StructViewBase<FieldSpec>, x: unknown): void {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        checkField(f, x, this._type.errors);
        this._host.beginWrite(this);
        writeString(t, this._u8, this._dv, this._off + fo, x as string);
        this._host.endWrite(this);
      };
    } else {
      const ai = arrayIndex++;
      get = function (this: StructViewBase<FieldSpec>): unknown {
        return this._arrays[ai];
      };
      set = function (this: StructViewBase<FieldSpec>, x: unknown): void {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        checkField(f, x, this._type.errors);
        this._host.beginWrite(this);
        writeField(f, this._u8, this._dv, this._off, x);
        this._host.endWrite(this);
      };
    }
    Object.defineProperty(View.prototype, f.name, { get, set, enumerable: true, configurable: false });
  }
  return View;
}

/** One getter per scalar type, so each field's getter has a single DataView call site. */
function scalarGetter(t: ScalarType, fo: number): (this: StructViewBase<FieldSpec>) => unknown {
  switch (t) {
    case 'u8':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getUint8(this._off + fo);
      };
    case 'i8':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getInt8(this._off + fo);
      };
    case 'bool':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getUint8(this._off + fo) !== 0;
      };
    case 'u16':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getUint16(this._off + fo, true);
      };
    case 'i16':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getInt16(this._off + fo, true);
      };
    case 'u32':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getUint32(this._off + fo, true);
      };
    case 'i32':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getInt32(this._off + fo, true);
      };
    case 'f32':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getFloat32(this._off + fo, true);
      };
    case 'f64':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getFloat64(this._off + fo, true);
      };
    case 'i64':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getBigInt64(this._off + fo, true);
      };
    case 'u64':
      return function (this: StructViewBase<FieldSpec>) {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return this._dv.getBigUint64(this._off + fo, true);
      };
  }
}
