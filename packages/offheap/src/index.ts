export type { ArrayType, FieldSpec, FieldType, FieldValue, ScalarType, StructValue, Utf8Type } from '@heapless/struct';
export { MAX_RECORD_BYTES } from './arena.js';
export { OffHeapError, type OffHeapErrorCode, OffHeapErrorCodes } from './errors.js';
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
export { array, StructLayout, struct, utf8 } from './struct.js';
export { StructArray, type StructView } from './struct-view.js';
