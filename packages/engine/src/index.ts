export type { Snapshot } from './background/snapshot.js';
export { CorruptionError, ENGINE_ERRORS, EngineError, type ErrorCode, ErrorCodes, isErrorCode } from './base/errors.js';
export type { ExpiryFilter } from './base/expiry-filter.js';
export { compareBytesAt } from './base/internal-key.js';
export { linkOrCopy } from './base/link-or-copy.js';
export { MAX_TIMER_MS } from './base/max-timer.js';
export type { Compression, EngineOptions } from './base/options.js';
export { pathWithin, realPath } from './base/real-path.js';
export { Engine, type EngineStats, type ReadOptions, type WriteOperation, type WriteOptions } from './db/engine.js';
export { openFollower } from './db/follower.js';
export type { TableInfo } from './db/properties.js';
export type { ApproximateSizeOptions } from './read/approximate-size.js';
export { ENTRY_HEADER_SIZE, EngineIterator, type Entry, type IteratorOptions } from './read/engine-iterator.js';
export type { TableProperties } from './table/table-properties.js';
export { destroyDatabase } from './tools/destroy.js';
export { LOST_FOLDER, type RepairOptions, type RepairReport, repairDatabase } from './tools/repair.js';
export {
  type VerifiedFile,
  type VerifyOptions,
  type VerifyProblem,
  type VerifyReport,
  verifyDatabase,
} from './tools/verify.js';
export { type CommitFollower, RECENT_COMMIT_BYTES } from './write/commit-feed.js';
export { forEachUpdate, type UpdateBatch, type UpdatesSince, type UpdateVisitor } from './write/updates-since.js';
export { type Bytes, MAX_KEY_SIZE, MAX_VALUE_SIZE, WriteBatch } from './write/write-batch.js';
