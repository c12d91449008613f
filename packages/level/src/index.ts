export { HeaplessChainedBatch } from './chained-batch.js';
export { HeaplessLevelError, type LevelErrorCode, LevelErrorCodes } from './errors.js';
export type { Format, FormatData } from './formats.js';
export { HeaplessLevel, type HeaplessLevelOptions, type HeaplessOpenOptions } from './heapless-level.js';
export { HeaplessIterator, HeaplessKeyIterator, HeaplessValueIterator } from './iterators.js';
export { HeaplessSnapshot } from './snapshot.js';
