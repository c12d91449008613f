import { checkField, readField, writeField } from './field-codec.js';
import { type FieldLayout, type FieldSpec, fieldSize, isFieldType, type StructValue, typeName } from './field-type.js';
import type { StructErrors } from './struct-errors.js';
import type { Utf8Reader } from './utf8.js';

/**
 * Names a field may not take, because a view (the client's or the map's) has a member of that name: `key`,
 * `positioned`, `toObject`, `assign`. Names starting with `_` (the views' internals) and the names of
 * `Object.prototype` are refused too. Both sides refuse the same names, so a layout one accepts the other accepts.
 */
export const RESERVED_FIELD_NAMES: readonly string[] = Object.freeze(['positioned', 'key', 'toObject', 'assign']);

/** Whether `name` may name a field (see RESERVED_FIELD_NAMES). */
export function isReservedFieldName(name: string): boolean {
  return name.startsWith('_') || RESERVED_FIELD_NAMES.includes(name) || name in Object.prototype;
}

/** What the package making a layout supplies: how it raises each refusal, and how it turns UTF-8 into strings. */
export interface StructBindings {
  readonly errors: StructErrors;
  readonly readUtf8: Utf8Reader;
}

/**
 * A struct layout: where each field sits, the signature, and the checked encoder and decoder of whole records
 * (FORMAT.md). It holds no per-record state, so one layout serves any number of records and views. The client and
 * `@heapless/offheap` extend it with their views (and the map with a decoder generated for the layout).
 */
export class StructLayout<F extends FieldSpec> {
  /** The field spec as given: plain data, which any side's `struct()` lays out the same way. */
  readonly fields: F;
  /** Bytes of one record. */
  readonly size: number;
  /** The fields in order, with offset and size. */
  readonly layout: readonly FieldLayout[];
  /** `name:type,...`, e.g. `id:u32,name:utf8(24),friends:array(u32,8)`: what a map persists for its layout. */
  readonly signature: string;
  /** How this layout raises its refusals. */
  readonly errors: StructErrors;
  /** How this layout reads string fields. */
  readonly readUtf8: Utf8Reader;

  /** Throws `errors.layout` for a non-object, an unknown type, a reserved name (RESERVED_FIELD_NAMES) or no field. */
  constructor(fields: F, bindings: StructBindings) {
    const errors = bindings.errors;
    if (typeof fields !== 'object' || fields === null) throw errors.layout('struct() takes an object of fields');
    const layout: FieldLayout[] = [];
    let offset = 0;
    for (const [name, type] of Object.entries(fields)) {
      if (!isFieldType(type)) throw errors.layout(`struct field ${name} has an unknown type ${JSON.stringify(type)}`);
      if (isReservedFieldName(name)) throw errors.layout(`struct field name ${name} is reserved by the view`);
      const size = fieldSize(type);
      layout.push({ name, type, offset, size });
      offset += size;
    }
    if (layout.length === 0) throw errors.layout('a struct needs at least one field');
    this.fields = fields;
    this.size = offset;
    this.layout = layout;
    this.signature = layout.map((f) => `${f.name}:${typeName(f.type)}`).join(',');
    this.errors = errors;
    this.readUtf8 = bindings.readUtf8;
  }

  /** `value` as a new Uint8Array of `size` bytes. Throws `errors.value` or `errors.overflow`. */
  encode(value: StructValue<F>): Uint8Array {
    const out = new Uint8Array(this.size);
    this.encodeAt(value, out, new DataView(out.buffer), 0);
    return out;
  }

  /**
   * Writes `value` into `bytes` at `offset`. Throws `errors.size` when fewer than `size` bytes are there,
   * `errors.value` or `errors.overflow` (bytes untouched) when the value does not fit the layout.
   */
  encodeInto(value: StructValue<F>, bytes: Uint8Array, offset = 0): void {
    this.#checkRoom('encodeInto', bytes, offset);
    this.encodeAt(value, bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  }

  /** The record at `offset` of `bytes` as a plain object. Throws `errors.size` when it does not fit. */
  decode(bytes: Uint8Array, offset = 0): StructValue<F> {
    this.#checkRoom('decode', bytes, offset);
    return this.decodeFrom(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  }

  /** Checks every field, then writes them at `off` of `u8`/`dv` (the caller made room): a refusal writes nothing. */
  encodeAt(value: StructValue<F>, u8: Uint8Array, dv: DataView, off: number): void {
    this.validate(value);
    this.writeValidated(value, u8, dv, off);
  }

  /** Throws `errors.value` or `errors.overflow` unless every field of `value` fits this layout. */
  validate(value: StructValue<F>): void {
    if (typeof value !== 'object' || value === null) {
      throw this.errors.value(`a struct value must be an object, got ${value === null ? 'null' : typeof value}`);
    }
    const v = value as Record<string, unknown>;
    for (const f of this.layout) checkField(f, v[f.name], this.errors);
  }

  /** Writes a value `validate` accepted at `off` of `u8`/`dv`; never throws. */
  writeValidated(value: StructValue<F>, u8: Uint8Array, dv: DataView, off: number): void {
    const v = value as Record<string, unknown>;
    for (const f of this.layout) writeField(f, u8, dv, off, v[f.name]);
  }

  /** The record at `off` of `u8`/`dv` as a plain object, its fields in layout order. */
  decodeFrom(u8: Uint8Array, dv: DataView, off: number): StructValue<F> {
    const out: Record<string, unknown> = {};
    for (const f of this.layout) out[f.name] = readField(f, u8, dv, off, this.readUtf8);
    return out as StructValue<F>;
  }

  #checkRoom(what: string, bytes: Uint8Array, offset: number): void {
    if (!(offset >= 0) || bytes.length - offset < this.size) {
      throw this.errors.size(`${what}: a struct of ${this.size} bytes, ${bytes.length - offset} bytes available`);
    }
  }
}

/** The plain-object type of a layout: `type User = Infer<typeof User>`. */
export type Infer<L> = L extends StructLayout<infer F> ? StructValue<F> : never;
