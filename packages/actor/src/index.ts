export { HeaplessError } from '@heapless/client/protocol';
export { Actor } from './actor.js';
export {
  type ActorHandle,
  type ActorRef,
  type CallObserver,
  handleOf,
  type Overflow,
  type SpawnOptions,
  type StopOptions,
} from './actor-handle.js';
export { detach } from './detach.js';
export { ACTOR_ERRORS, ActorError, type ActorErrorCode } from './errors.js';
export type { HttpReplier } from './http-reply.js';
export {
  KvActor,
  type KvActorOptions,
  type KvStats,
  type ScanOptions,
  type ScanPage,
  type WriteOptions,
} from './kv-actor.js';
export { kvRoutes } from './kv-http.js';
export { type ConnectionLoad, Metrics } from './metrics.js';
export { type Published, type PublishOptions, publish } from './publish.js';
export type { TlsOptions } from './publish-options.js';
export { Deferred, type ReplySink } from './reply-sink.js';
export { spawn } from './spawn.js';
export { spawnInWorker } from './worker-actor.js';
