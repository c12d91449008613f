// What both entries (browser and Node) export besides their own `connect`.
export type { BackoffOptions } from './backoff.js';
export {
  type Codec,
  Collection,
  type CollectionOptions,
  collection,
  type KvRemote,
  type KvScanOptions,
  type KvScanPage,
  type KvWriteOptions,
  msgpackCodec,
  type ScanOptions,
  type ScanResult,
  StructCollection,
} from './collection.js';
export { ERROR_CODES, type ErrorCode } from './error-codes.js';
export { HeaplessError } from './heapless-error.js';
export { type HttpClientOptions, httpClient } from './http-client.js';
export type { KvActor, KvCheckpoint, KvStats } from './kv-actor.js';
export type { KvBatchOp, KvBatchOptions, KvBatchResult } from './kv-batch.js';
export type { KvChange, KvWatchHead, KvWatchOptions } from './kv-watch.js';
export { pack, unpack } from './pack.js';
export { RemoteStream, type StreamOptions } from './remote-stream.js';
export type { ExposedNames, InstanceOf, Promisified, Remote } from './remote-types.js';
export type { ConnectOptions } from './rpc-client.js';
export type { Streamed } from './streamed.js';
export * from './struct.js';
