import { HeaplessError } from './heapless-error.js';
import { readUtf8, type Utf8Decoder, utf8Length, writeUtf8 } from './struct-utf8.js';

/**
 * Field types of a struct layout and how one field is read, checked and written (FORMAT.md, "Struct values").
 * Byte for byte the layout of `@heapless/offheap`'s structs, which the server stores untouched:
 *
 *   u8 i8 bool            1 byte (bool: 0 or 1)
 *   u16 i16               2 bytes
 *   u32 i32 f32           4 bytes
 *   f64 i64 u64           8 bytes (i64/u64 read and written as bigint)
 *   utf8(n)               length prefix (u8 if n ≤ 255, else u16) then n bytes of UTF-8, unused bytes zero
 *   array(t, n)           n elements of scalar type t, back to back
 *
 * Fields are packed in declaration order, little-endian, no padding (reads go through DataView, which allows
 * unaligned access). A value that does not fit is refused, never wrapped or cut: an integer outside its type's
 * range, a string or an array longer than its field (STRUCT_FIELD_OVERFLOW).
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
/** A layout's fields, in order: plain data, the same objects `@heapless/offheap`'s `struct()` takes. */
export type FieldSpec = Readonly<Record<string, FieldType>>;

/** Where a field sits in the record. */
export interface FieldLayout {
  readonly name: string;
  readonly type: FieldType;
  readonly offset: number;
  readonly size: number;
}

/** Bytes of each scalar type. */
export const SCALAR_SIZES: Readonly<Record<ScalarType, number>> = Object.freeze({
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
});

/** utf8(n) and array(t, n) take n in 1..65535: a u16 length prefix bounds a string, and a record stays small. */
export const MAX_FIELD_LENGTH = 0xffff;

export function isScalarType(t: unknown): t is ScalarType {
  return typeof t === 'string' && Object.hasOwn(SCALAR_SIZES, t);
}

export function invalidValue(message: string): HeaplessError {
  return new HeaplessError('STRUCT_INVALID_VALUE', message);
}

function overflow(name: string, got: string, type: string): HeaplessError {
  return new HeaplessError('STRUCT_FIELD_OVERFLOW', `struct field ${name} got ${got}, more than ${type} holds`);
}

/** Bytes of a field of type `t`. */
export function fieldSize(t: FieldType): number {
  if (typeof t === 'string') return SCALAR_SIZES[t];
  if (t.kind === 'utf8') return (t.maxBytes <= 0xff ? 1 : 2) + t.maxBytes;
  return SCALAR_SIZES[t.element] * t.length;
}

/** The type as the signature writes it: `u32`, `utf8(24)`, `array(u32,8)` (as `@heapless/offheap` writes it). */
export function typeName(t: FieldType): string {
  if (typeof t === 'string') return t;
  if (t.kind === 'utf8') return `utf8(${t.maxBytes})`;
  return `array(${t.element},${t.length})`;
}

export function readScalar(t: ScalarType, dv: DataView, o: number): number | bigint | boolean {
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

export function writeScalar(t: ScalarType, dv: DataView, o: number, v: unknown): void {
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

/** The zero of an element type, what an array's missing elements are written as. */
function zeroOf(t: ScalarType): number | bigint | boolean {
  return t === 'i64' || t === 'u64' ? 0n : t === 'bool' ? false : 0;
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
 * Throws STRUCT_INVALID_VALUE unless `v` has the JS type of `t` (boolean, bigint or number; an integer for an integer
 * type), and STRUCT_FIELD_OVERFLOW for an integer outside the type's range (300 in a `u8`, 2^33 in a `u32`).
 */
export function checkScalar(t: ScalarType, v: unknown, name: string): void {
  const want = t === 'bool' ? 'boolean' : t === 'i64' || t === 'u64' ? 'bigint' : 'number';
  if (typeof v !== want) throw invalidValue(`struct field ${name} (${t}) needs a ${want}, got ${typeof v}`);
  if (t === 'bool' || t === 'f32' || t === 'f64') return;
  if (t === 'i64' || t === 'u64') {
    const [lo, hi] = BIG_RANGES[t];
    if ((v as bigint) < lo || (v as bigint) > hi) throw overflow(name, String(v), t);
    return;
  }
  if (!Number.isInteger(v)) throw invalidValue(`struct field ${name} (${t}) needs an integer, got ${String(v)}`);
  const [lo, hi] = INT_RANGES[t];
  if ((v as number) < lo || (v as number) > hi) throw overflow(name, String(v), t);
}

/** Throws STRUCT_INVALID_VALUE or STRUCT_FIELD_OVERFLOW unless `x` can be written to field `f`. */
export function checkField(f: FieldLayout, x: unknown): void {
  const t = f.type;
  if (typeof t === 'string') {
    checkScalar(t, x, f.name);
    return;
  }
  if (t.kind === 'utf8') {
    if (typeof x !== 'string') throw invalidValue(`struct field ${f.name} needs a string, got ${typeof x}`);
    const n = utf8Length(x);
    if (n > t.maxBytes) throw overflow(f.name, `${n} UTF-8 bytes`, `utf8(${t.maxBytes})`);
    return;
  }
  if (!Array.isArray(x) && !ArrayBuffer.isView(x)) {
    throw invalidValue(`struct field ${f.name} needs an array, got ${typeof x}`);
  }
  const a = x as unknown as ArrayLike<unknown>;
  if (a.length > t.length) throw overflow(f.name, `${a.length} elements`, `array(${t.element}, ${t.length})`);
  for (let i = 0; i < a.length; i++) checkScalar(t.element, a[i], `${f.name}[${i}]`);
}

/** Writes a checked string: prefix, bytes, zeros to the end of the field (so equal values are equal bytes). */
export function writeString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number, s: string): void {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  const n = writeUtf8(s, u8, o + prefix);
  if (prefix === 1) u8[o] = n;
  else dv.setUint16(o, n, true);
  u8.fill(0, o + prefix + n, o + prefix + t.maxBytes);
}

/** Reads a string field; a length prefix beyond the field (a foreign or torn record) is cut to the field. */
export function readString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number, td: Utf8Decoder): string {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  let n = prefix === 1 ? u8[o]! : dv.getUint16(o, true);
  if (n > t.maxBytes) n = t.maxBytes;
  return readUtf8(u8, o + prefix, n, td);
}

/** Writes a checked value of field `f` of the record at `off`. */
export function writeField(f: FieldLayout, u8: Uint8Array, dv: DataView, off: number, x: unknown): void {
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
  const zero = zeroOf(t.element);
  for (let i = 0; i < t.length; i++) writeScalar(t.element, dv, o + i * es, i < a.length ? a[i] : zero);
}

/** Field `f` of the record at `off` as a plain value (arrays as new arrays). */
export function readField(f: FieldLayout, u8: Uint8Array, dv: DataView, off: number, td: Utf8Decoder): unknown {
  const t = f.type;
  const o = off + f.offset;
  if (typeof t === 'string') return readScalar(t, dv, o);
  if (t.kind === 'utf8') return readString(t, u8, dv, o, td);
  const es = SCALAR_SIZES[t.element];
  const out = new Array<unknown>(t.length);
  for (let i = 0; i < t.length; i++) out[i] = readScalar(t.element, dv, o + i * es);
  return out;
}
