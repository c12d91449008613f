import { invalidArgument, OffHeapError, OffHeapErrorCodes } from './errors.js';
import { utf8Length, writeUtf8 } from './key-bytes.js';

/**
 * Fixed-layout struct values and their flyweight views.
 *
 * Layout: fields in declaration order, packed (no padding; DataView reads unaligned), little-endian.
 *
 *   u8 i8 bool            1 byte (bool: 0 or 1)
 *   u16 i16               2 bytes
 *   u32 i32 f32           4 bytes
 *   f64 i64 u64           8 bytes (i64/u64 read and written as bigint)
 *   utf8(n)               length prefix (u8 if n ≤ 255, else u16) then n bytes of UTF-8, unused bytes zero
 *   array(t, n)           n elements of scalar type t, back to back
 *
 * A value that does not fit is refused with FIELD_OVERFLOW, never wrapped or cut: an integer outside its type's range
 * (300 in a u8, 2^33 in a u32), a string longer than n bytes, an array longer than n elements. A number that is not an
 * integer, in an integer field, is ENCODE_FAILED.
 */

export type ScalarType = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64' | 'bool' | 'i64' | 'u64';
/** A UTF-8 string of at most `maxBytes` bytes. */
export interface Utf8Type {
  readonly kind: 'utf8';
  readonly maxBytes: number;
}
/** A fixed-length array of `length` scalars. */
export interface ArrayType<E extends ScalarType = ScalarType> {
  readonly kind: 'array';
  readonly element: E;
  readonly length: number;
}
export type FieldType = ScalarType | Utf8Type | ArrayType;
export type FieldSpec = Readonly<Record<string, FieldType>>;

type ScalarValue<T> = T extends 'i64' | 'u64' ? bigint : T extends 'bool' ? boolean : number;
/** The JS type of a field's value. */
export type FieldValue<T> = T extends ScalarType
  ? ScalarValue<T>
  : T extends Utf8Type
    ? string
    : T extends ArrayType<infer E>
      ? ScalarValue<E>[]
      : never;
/** A struct as a plain object, what `get` returns and `set` takes. */
export type StructValue<F extends FieldSpec> = { -readonly [K in keyof F]: FieldValue<F[K]> };
/** What a view's field evaluates to: the value itself, or an in-place accessor for arrays. */
export type ViewField<T> = T extends ArrayType<infer E> ? StructArray<ScalarValue<E>> : FieldValue<T>;
/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = { -readonly [K in keyof F]: ViewField<F[K]> } & StructViewBase<F>;

const SCALAR_SIZES: Readonly<Record<ScalarType, number>> = {
  u8: 1,
  i8: 1,
  bool: 1,
  u16: 2,
  i16: 2,
  u32: 4,
  i32: 4,
  f32: 4,
  f64: 8,
  i64: 8,
  u64: 8,
};

/** A string field of at most `maxBytes` UTF-8 bytes (1..65535). */
export function utf8(maxBytes: number): Utf8Type {
  if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > 0xffff) {
    throw invalidArgument(`utf8(n) needs an integer n in 1..65535, got ${maxBytes}`);
  }
  return { kind: 'utf8', maxBytes };
}

/** A fixed-length array field of `length` elements of a scalar type. */
export function array<E extends ScalarType>(element: E, length: number): ArrayType<E> {
  if (!(element in SCALAR_SIZES))
    throw invalidArgument(`array() element must be a scalar type, got ${String(element)}`);
  if (!Number.isInteger(length) || length < 1 || length > 0xffff) {
    throw invalidArgument(`array(t, n) needs an integer n in 1..65535, got ${length}`);
  }
  return { kind: 'array', element, length };
}

/** Where a field sits in the record. */
export interface FieldLayout {
  readonly name: string;
  readonly type: FieldType;
  readonly offset: number;
  readonly size: number;
}

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
  readonly _type: StructType<FieldSpec>;
  readonly _arrays: StructArray<number | bigint | boolean>[];

  constructor(type: StructType<FieldSpec>, host: ViewHost) {
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

  /** Points the view at `off` in `u8`/`dv` (`seen`: the host's `reclaims` now, -1 to unposition); used by hosts. */
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
export class StructArray<T extends number | bigint | boolean> {
  readonly length: number;
  private readonly view: StructViewBase<FieldSpec>;
  private readonly fieldOffset: number;
  private readonly element: ScalarType;
  private readonly elementSize: number;

  constructor(view: StructViewBase<FieldSpec>, field: FieldLayout) {
    const t = field.type as ArrayType;
    this.view = view;
    this.fieldOffset = field.offset;
    this.element = t.element;
    this.elementSize = SCALAR_SIZES[t.element];
    this.length = t.length;
  }

  /** Element `i`; throws INVALID_ARGUMENT outside 0..length-1. */
  get(i: number): T {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) throw indexError(i, this.length);
    return readScalar(this.element, v._dv, v._off + this.fieldOffset + i * this.elementSize) as T;
  }

  /** Writes element `i` in place (one persisted write). */
  set(i: number, value: T): void {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    if (!(i >= 0 && i < this.length) || !Number.isInteger(i)) throw indexError(i, this.length);
    checkScalar(this.element, value, 'array element');
    v._host.beginWrite(v);
    writeScalar(this.element, v._dv, v._off + this.fieldOffset + i * this.elementSize, value);
    v._host.endWrite(v);
  }

  /** Writes all elements in place from `values` (missing ones become zero); one persisted write. */
  assign(values: ArrayLike<T>): void {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    if (values.length > this.length) {
      throw new OffHeapError(
        OffHeapErrorCodes.FIELD_OVERFLOW,
        `array of ${values.length} elements does not fit array(${this.element}, ${this.length})`,
      );
    }
    for (let i = 0; i < values.length; i++) checkScalar(this.element, values[i], `array element ${i}`);
    const zero = this.element === 'i64' || this.element === 'u64' ? 0n : this.element === 'bool' ? false : 0;
    const base = v._off + this.fieldOffset;
    v._host.beginWrite(v);
    for (let i = 0; i < this.length; i++) {
      writeScalar(this.element, v._dv, base + i * this.elementSize, i < values.length ? values[i] : zero);
    }
    v._host.endWrite(v);
  }

  /** The elements as a new array. */
  toArray(): T[] {
    const v = this.view;
    if (v._reclaims !== v._host.reclaims) v._host.revalidate(v);
    const out: T[] = [];
    const base = v._off + this.fieldOffset;
    for (let i = 0; i < this.length; i++) out.push(readScalar(this.element, v._dv, base + i * this.elementSize) as T);
    return out;
  }
}

function indexError(i: number, n: number): OffHeapError {
  return invalidArgument(`array index ${i} is outside 0..${n - 1}`);
}

function readScalar(t: ScalarType, dv: DataView, o: number): number | bigint | boolean {
  switch (t) {
    case 'u8':
      return dv.getUint8(o);
    case 'i8':
      return dv.getInt8(o);
    case 'bool':
      return dv.getUint8(o) !== 0;
    case 'u16':
      return dv.getUint16(o, true);
    case 'i16':
      return dv.getInt16(o, true);
    case 'u32':
      return dv.getUint32(o, true);
    case 'i32':
      return dv.getInt32(o, true);
    case 'f32':
      return dv.getFloat32(o, true);
    case 'f64':
      return dv.getFloat64(o, true);
    case 'i64':
      return dv.getBigInt64(o, true);
    case 'u64':
      return dv.getBigUint64(o, true);
  }
}

function writeScalar(t: ScalarType, dv: DataView, o: number, v: unknown): void {
  switch (t) {
    case 'u8':
      dv.setUint8(o, v as number);
      return;
    case 'i8':
      dv.setInt8(o, v as number);
      return;
    case 'bool':
      dv.setUint8(o, v ? 1 : 0);
      return;
    case 'u16':
      dv.setUint16(o, v as number, true);
      return;
    case 'i16':
      dv.setInt16(o, v as number, true);
      return;
    case 'u32':
      dv.setUint32(o, v as number, true);
      return;
    case 'i32':
      dv.setInt32(o, v as number, true);
      return;
    case 'f32':
      dv.setFloat32(o, v as number, true);
      return;
    case 'f64':
      dv.setFloat64(o, v as number, true);
      return;
    case 'i64':
      dv.setBigInt64(o, v as bigint, true);
      return;
    case 'u64':
      dv.setBigUint64(o, v as bigint, true);
      return;
  }
}

/** The range of each integer type: a value outside it does not fit, and is refused rather than wrapped. */
const INT_RANGES: Readonly<Record<'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32', readonly [number, number]>> = {
  u8: [0, 0xff],
  i8: [-0x80, 0x7f],
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffff_ffff],
  i32: [-0x8000_0000, 0x7fff_ffff],
};
const BIG_RANGES: Readonly<Record<'i64' | 'u64', readonly [bigint, bigint]>> = {
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u64: [0n, 2n ** 64n - 1n],
};

/**
 * Throws ENCODE_FAILED unless `v` has the JS type of `t` (boolean, bigint or number; an integer for an integer type),
 * and FIELD_OVERFLOW for an integer outside the type's range (300 in a `u8`, 2^33 in a `u32`).
 */
function checkScalar(t: ScalarType, v: unknown, name: string): void {
  const ok =
    t === 'bool' ? typeof v === 'boolean' : t === 'i64' || t === 'u64' ? typeof v === 'bigint' : typeof v === 'number';
  if (!ok) {
    const want = t === 'bool' ? 'a boolean' : t === 'i64' || t === 'u64' ? 'a bigint' : 'a number';
    throw new OffHeapError(
      OffHeapErrorCodes.ENCODE_FAILED,
      `struct field ${name} (${t}) needs ${want}, got ${typeof v}`,
    );
  }
  if (t === 'bool' || t === 'f32' || t === 'f64') return;
  if (t === 'i64' || t === 'u64') {
    const [lo, hi] = BIG_RANGES[t];
    if ((v as bigint) < lo || (v as bigint) > hi) throw overflow(name, String(v), t);
    return;
  }
  if (!Number.isInteger(v)) {
    throw new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, `struct field ${name} (${t}) needs an integer, got ${v}`);
  }
  const [lo, hi] = INT_RANGES[t];
  if ((v as number) < lo || (v as number) > hi) throw overflow(name, String(v), t);
}

function fieldSize(t: FieldType): number {
  if (typeof t === 'string') return SCALAR_SIZES[t];
  if (t.kind === 'utf8') return (t.maxBytes <= 0xff ? 1 : 2) + t.maxBytes;
  return SCALAR_SIZES[t.element] * t.length;
}

function typeName(t: FieldType): string {
  if (typeof t === 'string') return t;
  if (t.kind === 'utf8') return `utf8(${t.maxBytes})`;
  return `array(${t.element},${t.length})`;
}

function validType(t: unknown): t is FieldType {
  if (typeof t === 'string') return t in SCALAR_SIZES;
  if (typeof t !== 'object' || t === null) return false;
  const o = t as { kind?: unknown; maxBytes?: unknown; element?: unknown; length?: unknown };
  if (o.kind === 'utf8') return Number.isInteger(o.maxBytes) && (o.maxBytes as number) >= 1;
  if (o.kind === 'array')
    return typeof o.element === 'string' && o.element in SCALAR_SIZES && Number.isInteger(o.length);
  return false;
}

/** A struct layout: encodes/decodes plain objects and makes flyweight views. Create with `struct({...})`. */
export class StructType<F extends FieldSpec> {
  /** The field spec as given (plain data: it can be sent to a worker and rebuilt there with `struct`). */
  readonly fields: F;
  /** Bytes of one record's value. */
  readonly size: number;
  readonly layout: readonly FieldLayout[];
  /** Stable text of the layout, persisted with a map so a reopen with another layout is refused. */
  readonly signature: string;
  private readonly makeView: (host: ViewHost) => StructView<F>;
  private readonly decoder: (u8: Uint8Array, dv: DataView, off: number) => unknown;

  constructor(fields: F) {
    const layout: FieldLayout[] = [];
    let offset = 0;
    for (const [name, type] of Object.entries(fields)) {
      if (!validType(type)) throw invalidArgument(`struct field ${name} has an unknown type ${JSON.stringify(type)}`);
      if (name in StructViewBase.prototype || name.startsWith('_')) {
        throw invalidArgument(`struct field name ${name} is reserved by the view`);
      }
      const size = fieldSize(type);
      layout.push({ name, type, offset, size });
      offset += size;
    }
    if (layout.length === 0) throw invalidArgument('a struct needs at least one field');
    this.fields = fields;
    this.size = offset;
    this.layout = layout;
    this.signature = layout.map((f) => `${f.name}:${typeName(f.type)}`).join(',');
    this.decoder = makeDecoder(layout);
    const View = makeViewClass(layout);
    const self = this as unknown as StructType<FieldSpec>;
    this.makeView = (host) => new View(self, host) as unknown as StructView<F>;
  }

  /** A new view for `host` (maps call this from `map.view()`). */
  createView(host: ViewHost): StructView<F> {
    return this.makeView(host);
  }

  /** `value` as a new Uint8Array of `size` bytes (for `setBytes`, or to send a struct over the wire). */
  encode(value: StructValue<F>): Uint8Array {
    const out = new Uint8Array(this.size);
    this.encodeInto(value, out, new DataView(out.buffer), 0);
    return out;
  }

  /** Decodes `size` bytes of `bytes` from `offset` into a plain object. */
  decode(bytes: Uint8Array, offset = 0): StructValue<F> {
    if (bytes.length - offset < this.size) {
      throw new OffHeapError(
        OffHeapErrorCodes.DECODE_FAILED,
        `struct of ${this.size} bytes does not fit in ${bytes.length - offset} bytes`,
      );
    }
    return this.decodeFrom(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  }

  /** Writes `value` at `off` (validating every field first, so a refused value leaves the bytes untouched). */
  encodeInto(value: StructValue<F>, u8: Uint8Array, dv: DataView, off: number): void {
    this.validate(value);
    this.writeValidated(value, u8, dv, off);
  }

  /** Throws ENCODE_FAILED or FIELD_OVERFLOW unless every field of `value` fits this layout. */
  validate(value: StructValue<F>): void {
    if (typeof value !== 'object' || value === null) {
      throw new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, `a struct value must be an object, got ${typeof value}`);
    }
    const v = value as Record<string, unknown>;
    for (const f of this.layout) checkField(f, v[f.name]);
  }

  /** Writes a value `validate` accepted; never throws. */
  writeValidated(value: StructValue<F>, u8: Uint8Array, dv: DataView, off: number): void {
    const v = value as Record<string, unknown>;
    for (const f of this.layout) writeField(f, u8, dv, off, v[f.name]);
  }

  /** Reads the record at `off` as a plain object. */
  decodeFrom(u8: Uint8Array, dv: DataView, off: number): StructValue<F> {
    return this.decoder(u8, dv, off) as StructValue<F>;
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
function makeDecoder(layout: readonly FieldLayout[]): (u8: Uint8Array, dv: DataView, off: number) => unknown {
  const strings: Utf8Type[] = [];
  const parts: string[] = [];
  for (const f of layout) {
    const t = f.type;
    let expr: string;
    if (typeof t === 'string') expr = SCALAR_READ[t](`off + ${f.offset}`);
    else if (t.kind === 'utf8') {
      expr = `readString(strings[${strings.length}], u8, dv, off + ${f.offset})`;
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
    `return function decodeStruct(u8, dv, off) { return { ${parts.join(', ')} }; };`,
  ) as (rs: typeof readString, strings: Utf8Type[]) => (u8: Uint8Array, dv: DataView, off: number) => unknown;
  return factory(readString, strings);
}

/** Defines a struct layout: `struct({ id: 'u32', name: utf8(24), friends: array('u32', 8) })`. */
export function struct<F extends FieldSpec>(fields: F): StructType<F> {
  return new StructType(fields);
}

function checkField(f: FieldLayout, x: unknown): void {
  const t = f.type;
  if (typeof t === 'string') {
    checkScalar(t, x, f.name);
    return;
  }
  if (t.kind === 'utf8') {
    if (typeof x !== 'string') {
      throw new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, `struct field ${f.name} needs a string, got ${typeof x}`);
    }
    const n = utf8Length(x);
    if (n > t.maxBytes) throw overflow(f.name, `${n} UTF-8 bytes`, `utf8(${t.maxBytes})`);
    return;
  }
  if (!Array.isArray(x) && !ArrayBuffer.isView(x)) {
    throw new OffHeapError(OffHeapErrorCodes.ENCODE_FAILED, `struct field ${f.name} needs an array, got ${typeof x}`);
  }
  const a = x as ArrayLike<unknown>;
  if (a.length > t.length) throw overflow(f.name, `${a.length} elements`, `array(${t.element}, ${t.length})`);
  for (let i = 0; i < a.length; i++) checkScalar(t.element, a[i], `${f.name}[${i}]`);
}

function overflow(name: string, got: string, type: string): OffHeapError {
  return new OffHeapError(OffHeapErrorCodes.FIELD_OVERFLOW, `struct field ${name} got ${got}, more than ${type} holds`);
}

function writeField(f: FieldLayout, u8: Uint8Array, dv: DataView, off: number, x: unknown): void {
  const t = f.type;
  const o = off + f.offset;
  if (typeof t === 'string') {
    writeScalar(t, dv, o, x);
    return;
  }
  if (t.kind === 'utf8') {
    writeString(t, u8, dv, o, x as string);
    return;
  }
  const a = x as ArrayLike<unknown>;
  const es = SCALAR_SIZES[t.element];
  for (let i = 0; i < t.length; i++) {
    writeScalar(t.element, dv, o + i * es, i < a.length ? a[i] : t.element === 'i64' || t.element === 'u64' ? 0n : 0);
  }
}

function writeString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number, s: string): void {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  const n = writeUtf8(s, u8, o + prefix);
  if (prefix === 1) u8[o] = n;
  else dv.setUint16(o, n, true);
  u8.fill(0, o + prefix + n, o + prefix + t.maxBytes);
}

function readString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number): string {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  let n = prefix === 1 ? u8[o]! : dv.getUint16(o, true);
  if (n > t.maxBytes) n = t.maxBytes; // a torn or foreign record never reads past the field
  return Buffer.prototype.utf8Slice.call(u8, o + prefix, o + prefix + n);
}

/**
 * A view class with one accessor per field on its prototype. Each accessor closes over its field's offset, so a
 * read is: check the reclaim count, one DataView load. Classes are per struct type, so property access stays monomorphic.
 */
function makeViewClass(
  layout: readonly FieldLayout[],
): new (
  type: StructType<FieldSpec>,
  host: ViewHost,
) => StructViewBase<FieldSpec> {
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
        checkScalar(t, x, f.name);
        this._host.beginWrite(this);
        writeScalar(t, this._dv, this._off + fo, x);
        this._host.endWrite(this);
      };
    } else if (t.kind === 'utf8') {
      get = function (this: StructViewBase<FieldSpec>): unknown {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        return readString(t, this._u8, this._dv, this._off + fo);
      };
      set = function (this: StructViewBase<FieldSpec>, x: unknown): void {
        if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
        checkField(f, x);
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
        checkField(f, x);
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
