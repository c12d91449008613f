export type { ArrayType, FieldSpec, FieldType, FieldValue, ScalarType, StructValue, Utf8Type } from '@heapless/struct';
export {
  isOffHeapErrorCode,
  OFFHEAP_ERRORS,
  OffHeapError,
  type OffHeapErrorCode,
  OffHeapErrorCodes,
  VersionMismatchError,
} from './errors.js';
export { type BatchResult, type BatchWriteOptions, MapBatch, type VersionCheck } from './map/map-batch.js';
export type { ChangesSince, ChangeVisitor, MapChanges } from './map/map-changes.js';
export type { MapCheckpoint } from './map/map-checkpoint.js';
export { MAX_META_NAME_BYTES, MAX_META_VALUE_BYTES, type MapMetadata } from './map/map-meta.js';
export {
  type DeleteOptions,
  type ExpiryOptions,
  MAX_KEY_BYTES,
  type MapEntry,
  type MapKey,
  type MapOpenStats,
  type OffHeapMapOpenOptions,
  type OffHeapMapOptions,
  type OffHeapMapStats,
  type SetOptions,
} from './map/map-options.js';
export { OffHeapMap } from './map/offheap-map.js';
export type { RangeOptions, RangePage } from './map/ordered-range.js';
export { MAX_RECORD_BYTES } from './memory/arena.js';
export {
  IMAGE_FILE as MAP_IMAGE_FILE,
  type ImageProblem,
  type ImageVerifyReport,
  verifyMapImage,
} from './persist/image.js';
export { ImageStreamCheck, VerifiedImage } from './persist/image-check.js';
export type { ImageScheduleStats } from './persist/image-schedule.js';
export {
  MAP_RECORD_RANGE,
  type MapEngineKey,
  mapEngineKey,
  mapRecordKey,
  mapRecordValue,
  readMapMeta,
} from './persist/map-keys.js';
export { type ImageLoader, type NativeStatus, nativeStatus } from './persist/native.js';
export type { MapMeta } from './persist/persistence.js';
export { attach, OffHeapMapReader } from './shared/offheap-reader.js';
export type { WorkerFunction } from './shared/parallel-task.js';
export type { ScanCursor } from './shared/record-cursor.js';
export type { SharedLayout, SharedMapHandle } from './shared/shared-handle.js';
export { array, StructLayout, struct, utf8 } from './struct.js';
export { StructArray, type StructView } from './struct-view.js';
