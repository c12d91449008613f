/**
 * @heapless/replica: heapless replicas on NATS JetStream. The change-message format (FORMAT.md) and its codec,
 * change streams, publishing, ordered reading from a position, checkpoints in the JetStream object store, and the
 * follower that applies a stream to an OffHeapMap.
 */
export {
  type Change,
  type DeleteChange,
  decodeChanges,
  deleteChange,
  encodeChanges,
  OP_DELETE,
  OP_SET,
  type SetChange,
  setChange,
} from './change/change-codec.js';
export { type ChangeBatch, ChangeConsumer, type ConsumeOptions, consumeChanges } from './change/change-consumer.js';
export {
  type ChangeLimits,
  changeLimits,
  changeSubject,
  DEFAULT_CHANGE_LIMITS,
  DEFAULT_SUBJECT_PREFIX,
  FORMAT_HEADER,
  FORMAT_VERSION,
  MSG_ID_HEADER,
  SCHEMA_HEADER,
} from './change/change-format.js';
export { type ChangeMessage, changeHeaders, type ReadOptions, readChangeMessage } from './change/change-message.js';
export { ChangePublisher, type PublishAck, type PublisherOptions } from './change/change-publisher.js';
export {
  assertResumable,
  type ChangeStreamOptions,
  ensureChangeStream,
  type ResumeCheck,
  readStreamPosition,
  resumeFrom,
  type StreamPosition,
  verifyChangeStream,
} from './change/change-stream.js';
export { type CheckpointFile, type CheckpointManifest, MANIFEST_FORMAT } from './checkpoint/checkpoint-manifest.js';
export {
  CheckpointStore,
  type CheckpointStoreOptions,
  type CheckpointSummary,
  type DownloadedCheckpoint,
  type UploadOptions,
} from './checkpoint/checkpoint-store.js';
export { describeError, isReplicaError, REPLICA_ERRORS, ReplicaError, type ReplicaErrorCode } from './errors.js';
export { Follower } from './follow/follower.js';
export {
  addFollowerMeta,
  type FollowerState,
  META_CHECKPOINT,
  META_POSITION,
  META_SCHEMA,
  META_STREAM,
  readFollowerState,
} from './follow/follower-meta.js';
export {
  type LocalDataOptions,
  type LocalFollowerData,
  openLocalFollowerData,
} from './follow/follower-open.js';
export {
  DEFAULT_MAX_REPLAY,
  type FollowerLog,
  type FollowerOptions,
  type FollowerStart,
  type FollowerStatus,
} from './follow/follower-options.js';
export type { MapOpenOptions } from './follow/local-data.js';
export {
  DEFAULT_KEEP_CHECKPOINTS,
  type PublishCheckpointOptions,
  type PublishedCheckpoint,
  publishMapCheckpoint,
} from './follow/publish-checkpoint.js';
export { planStart, type ReloadReason, type StartFacts, type StartPlan } from './follow/start-plan.js';
export { type ConnectOptions, connectToNats } from './nats/connect.js';
export { WakeablePause } from './nats/pause.js';
export { openReplica } from './serve/replica.js';
export type { Replica, ReplicaOptions } from './serve/replica-options.js';
