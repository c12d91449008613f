export { CorruptionError, ENGINE_ERRORS, EngineError, type ErrorCode, ErrorCodes, isErrorCode } from './base/errors.js';
export type { Compression, EngineOptions } from './base/options.js';
export { Engine, type EngineStats, type ReadOptions, type WriteOperation, type WriteOptions } from './db/engine.js';
export { ENTRY_HEADER_SIZE, EngineIterator, type Entry, type IteratorOptions } from './db/engine-iterator.js';
export type { Snapshot } from './db/snapshot.js';
export { forEachUpdate, type UpdateBatch, type UpdatesSince, type UpdateVisitor } from './db/updates-since.js';
export { type Bytes, MAX_KEY_SIZE, MAX_VALUE_SIZE, WriteBatch } from './db/write-batch.js';
