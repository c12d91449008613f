/**
 * @heapless/replica: heapless replicas on NATS JetStream. The entry points: {@link openReplica}, a server's map
 * that follows a change stream and writes through it; the {@link Follower} it is built on; connecting, making a
 * change stream, publishing to it ({@link ChangePublisher}) and reading it in order ({@link consumeChanges});
 * checkpoints in the JetStream object store ({@link CheckpointStore}, {@link publishMapCheckpoint}); and the
 * errors. What the package's own tests need beyond these is in `@heapless/replica/internal`, which is not a stable
 * interface.
 */
// A change of the log is the protocol's one write operation; these are the names the change log has always used.
export {
  deleteOp as deleteChange,
  setOp as setChange,
  type WriteOp as Change,
} from '@heapless/client/protocol';
export {
  type ChangeBatch,
  type ChangeConsumer,
  type ConsumeOptions,
  consumeChanges,
} from './change/change-consumer.js';
export type { ChangeMessage } from './change/change-message.js';
export { ChangePublisher, type PublishAck, type PublisherOptions } from './change/change-publisher.js';
export { type ChangeStreamOptions, ensureChangeStream, type StreamPosition } from './change/change-stream.js';
export type { CheckpointManifest } from './checkpoint/checkpoint-manifest.js';
export {
  CheckpointStore,
  type CheckpointStoreOptions,
  type CheckpointSummary,
  type DownloadedCheckpoint,
  type UploadOptions,
} from './checkpoint/checkpoint-store.js';
export {
  isReplicaError,
  isReplicaErrorCode,
  REPLICA_ERRORS,
  ReplicaError,
  type ReplicaErrorCode,
  ReplicaErrorCodes,
} from './errors.js';
export { Follower } from './follow/follower.js';
export { type FollowerState, readFollowerState } from './follow/follower-meta.js';
export type { FollowerLog, FollowerOptions, FollowerStart, FollowerStatus } from './follow/follower-options.js';
export type { MapOpenOptions } from './follow/local-data.js';
export {
  type PublishCheckpointOptions,
  type PublishedCheckpoint,
  publishMapCheckpoint,
} from './follow/publish-checkpoint.js';
export { type ConnectOptions, connectToNats } from './nats/connect.js';
export { openReplica } from './serve/replica.js';
export type { Replica, ReplicaOptions } from './serve/replica-options.js';
