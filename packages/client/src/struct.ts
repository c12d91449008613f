/**
 * @heapless/client/struct: struct layouts and flyweight views alone (FORMAT.md, "Struct values"), byte for byte the
 * layout `@heapless/offheap` stores. No dependency and nothing Node-specific: DataView, typed arrays, TextDecoder.
 */
export type { ArrayType, FieldLayout, FieldSpec, FieldType, ScalarType, Utf8Type } from './struct-fields.js';
export {
  array,
  type FieldValue,
  type Infer,
  StructLayout,
  type StructValue,
  type StructView,
  struct,
  utf8,
  type ViewField,
} from './struct-layout.js';
export { StructArray, StructViewBase } from './struct-view.js';
