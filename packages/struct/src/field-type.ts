import type { StructErrors } from './struct-errors.js';

/**
 * The field types of a struct layout and their sizes (FORMAT.md):
 *
 *   u8 i8 bool            1 byte (bool: 0 or 1)
 *   u16 i16               2 bytes
 *   u32 i32 f32           4 bytes
 *   f64 i64 u64           8 bytes (i64/u64 read and written as bigint)
 *   utf8(n)               length prefix (u8 if n ≤ 255, else u16) then n bytes of UTF-8, unused bytes zero
 *   array(t, n)           n elements of scalar type t, back to back
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
/** A layout's fields, in order: plain data (it can be sent to a worker or another process and laid out there). */
export type FieldSpec = Readonly<Record<string, FieldType>>;

/** Where a field sits in the record. */
export interface FieldLayout {
  readonly name: string;
  readonly type: FieldType;
  readonly offset: number;
  readonly size: number;
}

/** The JS type of a scalar's value. */
export type ScalarValue<T> = T extends 'i64' | 'u64' ? bigint : T extends 'bool' ? boolean : number;
/** The JS type of a field's value. */
export type FieldValue<T> = T extends ScalarType
  ? ScalarValue<T>
  : T extends Utf8Type
    ? string
    : T extends ArrayType<infer E>
      ? ScalarValue<E>[]
      : never;
/** A struct as a plain object: what an encoder takes and a decoder returns. */
export type StructValue<F extends FieldSpec> = { -readonly [K in keyof F]: FieldValue<F[K]> };

/** What a view's array field is, on either side: an accessor that reads and writes elements in place. */
export interface ArrayAccess<T extends number | bigint | boolean> {
  /** Elements in the field (fixed by the layout). */
  readonly length: number;
  /** Element `i`. */
  get(i: number): T;
  /** Writes element `i` in place. */
  set(i: number, value: T): void;
  /** Writes all elements from `values`; missing ones become zero. */
  assign(values: ArrayLike<T>): void;
  /** The elements as a new array. */
  toArray(): T[];
}
/** What a view's field evaluates to: the value itself, or an in-place accessor for arrays. */
export type ViewField<T> = T extends ArrayType<infer E> ? ArrayAccess<ScalarValue<E>> : FieldValue<T>;
/** The fields of a view over a record of `F` (each side adds its view's own members). */
export type ViewFields<F extends FieldSpec> = { -readonly [K in keyof F]: ViewField<F[K]> };

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

function validLength(n: unknown): boolean {
  return Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_FIELD_LENGTH;
}

/** Whether `t` is a field type this format can lay out (plain data from anywhere: a spec may come off the wire). */
export function isFieldType(t: unknown): t is FieldType {
  if (isScalarType(t)) return true;
  if (typeof t !== 'object' || t === null) return false;
  const o = t as { kind?: unknown; maxBytes?: unknown; element?: unknown; length?: unknown };
  if (o.kind === 'utf8') return validLength(o.maxBytes);
  if (o.kind === 'array') return isScalarType(o.element) && validLength(o.length);
  return false;
}

/** A string field of at most `maxBytes` UTF-8 bytes (1..65535); anything else is `errors.layout`. */
export function utf8Type(maxBytes: number, errors: StructErrors): Utf8Type {
  if (!validLength(maxBytes)) throw errors.layout(`utf8(n) needs an integer n in 1..65535, got ${maxBytes}`);
  return { kind: 'utf8', maxBytes };
}

/** A fixed-length array field of `length` (1..65535) scalars; anything else is `errors.layout`. */
export function arrayType<E extends ScalarType>(element: E, length: number, errors: StructErrors): ArrayType<E> {
  if (!isScalarType(element)) throw errors.layout(`array() element must be a scalar type, got ${String(element)}`);
  if (!validLength(length)) throw errors.layout(`array(t, n) needs an integer n in 1..65535, got ${length}`);
  return { kind: 'array', element, length };
}

/** Bytes of a field of type `t`. */
export function fieldSize(t: FieldType): number {
  if (typeof t === 'string') return SCALAR_SIZES[t];
  if (t.kind === 'utf8') return (t.maxBytes <= 0xff ? 1 : 2) + t.maxBytes;
  return SCALAR_SIZES[t.element] * t.length;
}

/** The type as the signature writes it: `u32`, `utf8(24)`, `array(u32,8)`. */
export function typeName(t: FieldType): string {
  if (typeof t === 'string') return t;
  if (t.kind === 'utf8') return `utf8(${t.maxBytes})`;
  return `array(${t.element},${t.length})`;
}
