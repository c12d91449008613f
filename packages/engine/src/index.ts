export { CorruptionError, ENGINE_ERRORS, EngineError, type ErrorCode, ErrorCodes, isErrorCode } from './base/errors.js';
export { compareBytesAt } from './base/internal-key.js';
export { linkOrCopy } from './base/link-or-copy.js';
export type { Compression, EngineOptions } from './base/options.js';
export { pathWithin, realPath } from './base/real-path.js';
export type { ApproximateSizeOptions } from './db/approximate-size.js';
export { destroyDatabase } from './db/destroy.js';
export { Engine, type EngineStats, type ReadOptions, type WriteOperation, type WriteOptions } from './db/engine.js';
export { ENTRY_HEADER_SIZE, EngineIterator, type Entry, type IteratorOptions } from './db/engine-iterator.js';
export { openFollower } from './db/follower.js';
export type { TableInfo } from './db/properties.js';
export { LOST_FOLDER, type RepairOptions, type RepairReport, repairDatabase } from './db/repair.js';
export type { Snapshot } from './db/snapshot.js';
export { forEachUpdate, type UpdateBatch, type UpdatesSince, type UpdateVisitor } from './db/updates-since.js';
export {
  type VerifiedFile,
  type VerifyOptions,
  type VerifyProblem,
  type VerifyReport,
  verifyDatabase,
} from './db/verify.js';
export { type Bytes, MAX_KEY_SIZE, MAX_VALUE_SIZE, WriteBatch } from './db/write-batch.js';
export type { TableProperties } from './table/table-properties.js';
