/**
 * The wire protocol alone (FORMAT.md), for servers: frame codec, limits, close codes, error codes. No client.
 */
export { CLOSE_CODES } from './close-codes.js';
export type { KvScanOptions, KvScanPage, KvWriteOptions } from './collection.js';
export { codeFromWire, ERROR_CODES, type ErrorCode, isErrorCode } from './error-codes.js';
export { type CallMessage, FrameDecoder, type ReplyMessage, type ServerHello } from './frame-decoder.js';
export { FrameEncoder } from './frame-encoder.js';
export { HeaplessError } from './heapless-error.js';
export type { KvActor, KvCheckpoint, KvStats } from './kv-actor.js';
export type { KvBatchOp, KvBatchOptions, KvBatchResult } from './kv-batch.js';
export type { KvChange, KvWatchHead, KvWatchOptions } from './kv-watch.js';
export * from './limits.js';
export { isMethodName, RESERVED_NAMES, type ReservedName } from './method-names.js';
export { MsgpackDecoder } from './msgpack-decoder.js';
export { MSGPACK_OPTIONS } from './msgpack-options.js';
export type { ExposedNames, InstanceOf, MethodNames, Promisified, Remote } from './remote-types.js';
export { STREAM, STREAM_ITEM, type Streamed } from './streamed.js';
export { tokenFromProtocols, tokenProtocol } from './token.js';
export { isWellFormed } from './well-formed.js';
