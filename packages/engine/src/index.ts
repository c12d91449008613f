export { Engine, type EngineStats, type ReadOptions, type WriteOperation, type WriteOptions } from './engine.js';
export { ENTRY_HEADER_SIZE, EngineIterator, type Entry, type IteratorOptions } from './engine-iterator.js';
export { CorruptionError, EngineError, type ErrorCode, ErrorCodes } from './errors.js';
export type { Compression, EngineOptions } from './options.js';
export type { Snapshot } from './snapshot.js';
export { type Bytes, MAX_KEY_SIZE, MAX_VALUE_SIZE, WriteBatch } from './write-batch.js';
