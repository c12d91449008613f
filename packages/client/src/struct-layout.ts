import { HeaplessError } from './heapless-error.js';
import {
  type ArrayType,
  checkField,
  type FieldLayout,
  type FieldSpec,
  type FieldType,
  fieldSize,
  invalidValue,
  isScalarType,
  MAX_FIELD_LENGTH,
  readField,
  type ScalarType,
  typeName,
  type Utf8Type,
  writeField,
} from './struct-fields.js';
import type { Utf8Decoder } from './struct-utf8.js';
import { makeViewClass, type StructArray, StructViewBase, type ViewClass } from './struct-view.js';

type ScalarValue<T> = T extends 'i64' | 'u64' ? bigint : T extends 'bool' ? boolean : number;
/** The JS type of a field's value. */
export type FieldValue<T> = T extends ScalarType
  ? ScalarValue<T>
  : T extends Utf8Type
    ? string
    : T extends ArrayType<infer E>
      ? ScalarValue<E>[]
      : never;
/** A struct as a plain object: what `encode` takes and `decode` and `toObject()` return. */
export type StructValue<F extends FieldSpec> = { -readonly [K in keyof F]: FieldValue<F[K]> };
/** What a view's field evaluates to: the value itself, or an in-place accessor for arrays. */
export type ViewField<T> = T extends ArrayType<infer E> ? StructArray<ScalarValue<E>> : FieldValue<T>;
/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = { -readonly [K in keyof F]: ViewField<F[K]> } & StructViewBase<F>;
/** The plain-object type of a layout: `type User = Infer<typeof User>`. */
export type Infer<L> = L extends StructLayout<infer F> ? StructValue<F> : never;

/**
 * Names a field may not take because a view uses them: the view's own members, and `positioned` and `key`, which
 * `@heapless/offheap`'s views use, so that a layout accepted on one side is accepted on the other.
 */
const RESERVED_NAMES: readonly string[] = Object.freeze(['positioned', 'key', 'toObject', 'assign']);

function invalidLayout(message: string): HeaplessError {
  return new HeaplessError('STRUCT_INVALID_LAYOUT', message);
}

function validLength(n: unknown): boolean {
  return Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_FIELD_LENGTH;
}

/** A string field of at most `maxBytes` UTF-8 bytes (1..65535). Throws STRUCT_INVALID_LAYOUT otherwise. */
export function utf8(maxBytes: number): Utf8Type {
  if (!validLength(maxBytes)) throw invalidLayout(`utf8(n) needs an integer n in 1..65535, got ${maxBytes}`);
  return { kind: 'utf8', maxBytes };
}

/** A fixed-length array field of `length` (1..65535) scalars. Throws STRUCT_INVALID_LAYOUT otherwise. */
export function array<E extends ScalarType>(element: E, length: number): ArrayType<E> {
  if (!isScalarType(element)) throw invalidLayout(`array() element must be a scalar type, got ${String(element)}`);
  if (!validLength(length)) throw invalidLayout(`array(t, n) needs an integer n in 1..65535, got ${length}`);
  return { kind: 'array', element, length };
}

function validType(t: unknown): t is FieldType {
  if (isScalarType(t)) return true;
  if (typeof t !== 'object' || t === null) return false;
  const o = t as { kind?: unknown; maxBytes?: unknown; element?: unknown; length?: unknown };
  if (o.kind === 'utf8') return validLength(o.maxBytes);
  if (o.kind === 'array') return isScalarType(o.element) && validLength(o.length);
  return false;
}

function tooShort(what: string, size: number, have: number): HeaplessError {
  return new HeaplessError('STRUCT_SIZE_MISMATCH', `${what}: a struct of ${size} bytes, ${have} bytes available`);
}

/**
 * A struct layout: encodes and decodes plain objects and lays flyweight views over records' bytes. Create it with
 * `struct({...})`. It holds no per-record state (only a TextDecoder of its own), so one layout serves any number of
 * collections and views.
 */
export class StructLayout<F extends FieldSpec> {
  /** The field spec as given: plain data, which `@heapless/offheap`'s `struct()` accepts as it is. */
  readonly fields: F;
  /** Bytes of one record. */
  readonly size: number;
  readonly layout: readonly FieldLayout[];
  /** `name:type,...` exactly as `@heapless/offheap` persists it, e.g. `id:u32,name:utf8(24),friends:array(u32,8)`. */
  readonly signature: string;
  /** The decoder string fields use (instance-owned: no module state). */
  readonly _td: Utf8Decoder;
  readonly #View: ViewClass;

  /** Throws STRUCT_INVALID_LAYOUT for an unknown type, a reserved or `_`-prefixed name, or no field at all. */
  constructor(fields: F) {
    if (typeof fields !== 'object' || fields === null) throw invalidLayout('struct() takes an object of fields');
    const layout: FieldLayout[] = [];
    let offset = 0;
    for (const [name, type] of Object.entries(fields)) {
      if (!validType(type)) throw invalidLayout(`struct field ${name} has an unknown type ${JSON.stringify(type)}`);
      if (name.startsWith('_') || RESERVED_NAMES.includes(name) || name in StructViewBase.prototype) {
        throw invalidLayout(`struct field name ${name} is reserved by the view`);
      }
      const size = fieldSize(type);
      layout.push({ name, type, offset, size });
      offset += size;
    }
    if (layout.length === 0) throw invalidLayout('a struct needs at least one field');
    this.fields = fields;
    this.size = offset;
    this.layout = layout;
    this.signature = layout.map((f) => `${f.name}:${typeName(f.type)}`).join(',');
    this._td = new TextDecoder();
    this.#View = makeViewClass(layout);
  }

  /** `value` as a new Uint8Array of `size` bytes. Throws STRUCT_INVALID_VALUE or STRUCT_FIELD_OVERFLOW. */
  encode(value: StructValue<F>): Uint8Array {
    const out = new Uint8Array(this.size);
    this._encodeAt(value, out, new DataView(out.buffer), 0);
    return out;
  }

  /**
   * Writes `value` into `bytes` at `offset`. Throws STRUCT_SIZE_MISMATCH when fewer than `size` bytes are there,
   * STRUCT_INVALID_VALUE or STRUCT_FIELD_OVERFLOW (bytes untouched) when the value does not fit the layout.
   */
  encodeInto(value: StructValue<F>, bytes: Uint8Array, offset = 0): void {
    if (!(offset >= 0) || bytes.length - offset < this.size)
      throw tooShort('encodeInto', this.size, bytes.length - offset);
    this._encodeAt(value, bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  }

  /** The record at `offset` of `bytes` as a plain object. Throws STRUCT_SIZE_MISMATCH when it does not fit. */
  decode(bytes: Uint8Array, offset = 0): StructValue<F> {
    if (!(offset >= 0) || bytes.length - offset < this.size) throw tooShort('decode', this.size, bytes.length - offset);
    return this.decodeFrom(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  }

  /**
   * A view over the record at `offset` of `bytes` (no copy: writes through the view change `bytes`), or, without
   * `bytes`, over a new zeroed record of its own (fill it in field by field, then `collection.set(id, view)`).
   * Throws STRUCT_SIZE_MISMATCH when fewer than `size` bytes are there.
   */
  view(bytes?: Uint8Array, offset = 0): StructView<F> {
    const b = bytes ?? new Uint8Array(this.size);
    if (!(offset >= 0) || b.length - offset < this.size) throw tooShort('view', this.size, b.length - offset);
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
    return new this.#View(this as unknown as StructLayout<FieldSpec>, u8, dv, off, key) as unknown as StructView<F>;
  }

  /** Checks every field first, then writes them: a refused value leaves the bytes untouched. */
  _encodeAt(value: StructValue<F>, u8: Uint8Array, dv: DataView, off: number): void {
    if (typeof value !== 'object' || value === null) {
      throw invalidValue(`a struct value must be an object, got ${value === null ? 'null' : typeof value}`);
    }
    const v = value as Record<string, unknown>;
    for (const f of this.layout) checkField(f, v[f.name]);
    for (const f of this.layout) writeField(f, u8, dv, off, v[f.name]);
  }

  /** The record at absolute `off` of `u8`/`dv` as a plain object (every object gets its fields in layout order). */
  decodeFrom(u8: Uint8Array, dv: DataView, off: number): StructValue<F> {
    const out: Record<string, unknown> = {};
    for (const f of this.layout) out[f.name] = readField(f, u8, dv, off, this._td);
    return out as StructValue<F>;
  }
}

/** Defines a struct layout: `struct({ id: 'u32', name: utf8(24), friends: array('u32', 8) })`. */
export function struct<F extends FieldSpec>(fields: F): StructLayout<F> {
  return new StructLayout(fields);
}
