export { HeaplessError, type KvCheckpoint, type KvStats } from '@heapless/client/protocol';
export { ACTOR_ERRORS, ActorError, type ActorErrorCode, ActorErrorCodes, isActorErrorCode } from './errors.js';
export {
  KvActor,
  type KvActorOptions,
  type ScanOptions,
  type ScanPage,
  type WriteOptions,
} from './kv/kv-actor.js';
export { kvRoutes } from './kv/kv-http.js';
export { Actor } from './runtime/actor.js';
export {
  type ActorHandle,
  type ActorRef,
  type CallObserver,
  handleOf,
  type Overflow,
  type SpawnOptions,
  type StopOptions,
} from './runtime/actor-handle.js';
export { detach } from './runtime/detach.js';
export { Deferred, type ReplySink } from './runtime/reply-sink.js';
export { spawn } from './runtime/spawn.js';
export { spawnInWorker } from './runtime/worker-actor.js';
export type { HttpReplier } from './server/http-reply.js';
export { type ConnectionLoad, Metrics } from './server/metrics.js';
export { type Published, type PublishOptions, publish } from './server/publish.js';
export type { TlsOptions } from './server/publish-options.js';
