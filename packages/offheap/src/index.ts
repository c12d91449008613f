export { MAX_RECORD_BYTES } from './arena.js';
export { OFFHEAP_ERRORS, OffHeapError, type OffHeapErrorCode, OffHeapErrorCodes } from './errors.js';
export { type ImageLoader, type NativeStatus, nativeStatus } from './native.js';
export {
  MAX_KEY_BYTES,
  type MapKey,
  OffHeapMap,
  type OffHeapMapOpenOptions,
  type OffHeapMapOptions,
  type OffHeapMapStats,
} from './offheap-map.js';
export { attach, OffHeapMapReader } from './offheap-reader.js';
export type { RangeOptions, RangePage } from './ordered-range.js';
export type { WorkerFunction } from './parallel-task.js';
export type { ScanCursor } from './record-cursor.js';
export type { SharedLayout, SharedMapHandle } from './shared-handle.js';
export {
  type ArrayType,
  array,
  type FieldSpec,
  type FieldType,
  type FieldValue,
  type ScalarType,
  StructArray,
  StructType,
  type StructValue,
  type StructView,
  struct,
  type Utf8Type,
  utf8,
} from './struct.js';
