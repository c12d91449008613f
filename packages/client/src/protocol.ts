/**
 * The wire protocol alone (FORMAT.md), for servers: frame codec, limits, close codes, error codes. No client.
 */

export type { KvScanOptions, KvScanPage, KvWriteOptions } from './kv/collection.js';
export type { KvActor, KvCheckpoint, KvStats } from './kv/kv-actor.js';
export type { KvBatchOp, KvBatchOptions, KvBatchResult } from './kv/kv-batch.js';
export type { KvChange, KvWatchHead, KvWatchOptions } from './kv/kv-watch.js';
export { CLOSE_CODES } from './protocol/close-codes.js';
export { codeFromWire, ERROR_CODES, type ErrorCode, isErrorCode } from './protocol/error-codes.js';
export { type CallMessage, FrameDecoder, type ReplyMessage, type ServerHello } from './protocol/frame-decoder.js';
export { FrameEncoder } from './protocol/frame-encoder.js';
export { HeaplessError } from './protocol/heapless-error.js';
export * from './protocol/limits.js';
export { isMethodName, RESERVED_NAMES, type ReservedName } from './protocol/method-names.js';
export { MsgpackDecoder } from './protocol/msgpack-decoder.js';
export { MSGPACK_OPTIONS } from './protocol/msgpack-options.js';
export { STREAM, STREAM_ITEM, type Streamed } from './protocol/streamed.js';
export { tokenFromProtocols, tokenProtocol } from './protocol/token.js';
export { isWellFormed } from './protocol/well-formed.js';
export { type DeleteOp, deleteOp, type SetOp, setOp, type WriteOp } from './protocol/write-op.js';
export type { ExposedNames, InstanceOf, MethodNames, Promisified, Remote } from './transport/remote-types.js';
export {
  dataHeader,
  encodeClose,
  encodePreface,
  HEARTBEAT_RECORD,
  TCP_MAGIC,
  TcpProtocolError,
  type TcpRecord,
  TcpRecordReader,
} from './transport/tcp-records.js';
