/**
 * @heapless/replica: heapless replicas on NATS JetStream. The change-message format (FORMAT.md) and its codec,
 * change streams, publishing, ordered reading from a position, and checkpoints in the JetStream object store.
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
} from './change-codec.js';
export { type ChangeBatch, ChangeConsumer, type ConsumeOptions, consumeChanges } from './change-consumer.js';
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
} from './change-format.js';
export { type ChangeMessage, changeHeaders, type ReadOptions, readChangeMessage } from './change-message.js';
export { ChangePublisher, type PublishAck, type PublisherOptions } from './change-publisher.js';
export {
  assertResumable,
  type ChangeStreamOptions,
  ensureChangeStream,
  type ResumeCheck,
  readStreamPosition,
  resumeFrom,
  type StreamPosition,
  verifyChangeStream,
} from './change-stream.js';
export { type CheckpointFile, type CheckpointManifest, MANIFEST_FORMAT } from './checkpoint-manifest.js';
export {
  CheckpointStore,
  type CheckpointStoreOptions,
  type CheckpointSummary,
  type UploadOptions,
} from './checkpoint-store.js';
export { type ConnectOptions, connectToNats } from './connect.js';
export { isReplicaError, REPLICA_ERRORS, ReplicaError, type ReplicaErrorCode } from './errors.js';
