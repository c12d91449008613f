// What both entries (browser and Node) export besides their own `connect`.

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
} from './kv/collection.js';
export type { KvActor, KvCheckpoint, KvStats } from './kv/kv-actor.js';
export type { KvBatchOp, KvBatchOptions, KvBatchResult } from './kv/kv-batch.js';
export type { KvChange, KvWatchHead, KvWatchOptions } from './kv/kv-watch.js';
export { ERROR_CODES, type ErrorCode } from './protocol/error-codes.js';
export { HeaplessError } from './protocol/heapless-error.js';
export { pack, unpack } from './protocol/pack.js';
export type { Streamed } from './protocol/streamed.js';
export * from './struct.js';
export type { BackoffOptions } from './transport/backoff.js';
export { type HttpClientOptions, httpClient } from './transport/http-client.js';
export { RemoteStream, type StreamOptions } from './transport/remote-stream.js';
export type { ExposedNames, InstanceOf, Promisified, Remote } from './transport/remote-types.js';
export type { ConnectOptions } from './transport/rpc-client.js';
