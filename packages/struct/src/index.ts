/**
 * @heapless/struct: the struct record format (FORMAT.md) that the client and `@heapless/offheap` both write and
 * read: field types and sizes, offsets, the signature, checked scalar and UTF-8 writes, reads, and the skeleton of a
 * flyweight view. Browser-safe, and it imports nothing: error classes, string decoding and what surrounds a view's
 * access belong to the packages that import it.
 */
export { checkField, readField, readString, writeField, writeString } from './field-codec.js';
export {
  type ArrayAccess,
  type ArrayType,
  arrayType,
  type FieldLayout,
  type FieldSpec,
  type FieldType,
  type FieldValue,
  fieldSize,
  isFieldType,
  isScalarType,
  MAX_FIELD_LENGTH,
  SCALAR_SIZES,
  type ScalarType,
  type ScalarValue,
  type StructValue,
  typeName,
  type Utf8Type,
  utf8Type,
  type ViewField,
  type ViewFields,
} from './field-type.js';
export { checkScalar, readScalar, writeScalar, zeroOf } from './scalar.js';
export type { StructErrors } from './struct-errors.js';
export {
  type Infer,
  isReservedFieldName,
  RESERVED_FIELD_NAMES,
  type StructBindings,
  StructLayout,
} from './struct-layout.js';
export { defineFieldAccessors, StructArray, StructViewCore } from './struct-view.js';
export { textDecoderReader, type Utf8Decoder, type Utf8Reader, utf8Length, writeUtf8 } from './utf8.js';
