/**
 * @heapless/client/struct: struct layouts and flyweight views alone (`@heapless/struct`'s FORMAT.md), byte for byte
 * the layout `@heapless/offheap` stores. Nothing Node-specific: DataView, typed arrays, TextDecoder.
 */
export type {
  ArrayType,
  FieldLayout,
  FieldSpec,
  FieldType,
  FieldValue,
  Infer,
  ScalarType,
  StructValue,
  Utf8Type,
  ViewField,
} from '@heapless/struct';
export { array, StructLayout, struct, utf8 } from './struct/struct-layout.js';
export { StructArray, type StructView, StructViewBase } from './struct/struct-view.js';
