import {
  defineFieldAccessors,
  type FieldLayout,
  type FieldSpec,
  StructArray,
  type StructLayout,
  StructViewCore,
  type ViewFields,
} from '@heapless/struct';

export { StructArray };

/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = ViewFields<F> & StructViewBase<F>;

/**
 * A flyweight over one struct record's bytes, wherever they are: the reply frame a value arrived in, or a buffer of
 * the caller's. Reading a field decodes that field alone (one DataView load for a number, no allocation); assigning
 * a field writes it in place, in these bytes only (send them with `collection.set(id, view)`). Array fields' index
 * errors and refused values throw STRUCT_INVALID_VALUE or STRUCT_FIELD_OVERFLOW, nothing written.
 *
 * A view never owns its bytes and never copies them: it keeps the frame (or buffer) it reads alive for as long as
 * it is referenced. Fields prefixed `_` belong to the implementation and are not public API. The bytes are nobody
 * else's to change, so the skeleton's hooks stay empty.
 */
export class StructViewBase<F extends FieldSpec> extends StructViewCore<F> {
  /** The id the record was read under (collections set it), or undefined. */
  _key: string | undefined;

  constructor(layout: StructLayout<F>, u8: Uint8Array, dv: DataView, off: number, key: string | undefined) {
    super(layout, u8, dv, off);
    this._key = key;
  }

  /** The id this record was read under (`get`, `getMany`, `scan` set it); undefined for a view made by the layout. */
  get key(): string | undefined {
    return this._key;
  }
}

/** The class `makeViewClass` makes, typed without its layout's fields (so a layout stays covariant in them). */
export type ViewClass = new (
  layout: StructLayout<FieldSpec>,
  u8: Uint8Array,
  dv: DataView,
  off: number,
  key: string | undefined,
) => StructViewBase<FieldSpec>;

/**
 * A view class with one accessor per field on its prototype (the skeleton's closures, which need no `eval`, so pages
 * with a strict Content-Security-Policy can use them); a class per layout keeps property access monomorphic.
 */
export function makeViewClass(layout: readonly FieldLayout[]): ViewClass {
  class View extends StructViewBase<FieldSpec> {}
  defineFieldAccessors(View.prototype, layout);
  return View;
}
