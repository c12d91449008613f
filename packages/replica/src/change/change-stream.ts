/**
 * Change streams on JetStream (FORMAT.md, "Change streams"): create one or check that an existing one is what the
 * replicas expect, and read where it begins and ends, so that a follower can tell whether the stream still holds
 * the message after its stored position and how far behind it is.
 */
import {
  DiscardPolicy,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { type NatsConnection, nanos } from '@nats-io/nats-core';
import { durationMs } from '../duration.js';
import { ReplicaError } from '../errors.js';
import { replicaErrorOf } from '../nats/nats-errors.js';
import { changeSubject, checkName } from './change-format.js';

/** JetStream's "stream name already in use" (a concurrent create with another configuration). */
const STREAM_NAME_IN_USE = 10058;

/** What a change stream is made of. */
export interface ChangeStreamOptions {
  /** The stream's name (1-64 of `A-Z a-z 0-9 _ -`). */
  readonly name: string;
  /** The one subject it captures; default `heapless.<name>`. */
  readonly subject?: string;
  /** Copies on a cluster: 1 (default), or 3 for a stream that survives the loss of one node of three. */
  readonly replicas?: number;
  /** A publish repeated with the same `Nats-Msg-Id` within this window is stored once; default 2 minutes. */
  readonly duplicateWindowMs?: number;
  /** `file` (default: survives a restart of the server) or `memory`. */
  readonly storage?: 'file' | 'memory';
  /** Messages older than this are removed; default 0, never (followers too far behind load a checkpoint). */
  readonly maxAgeMs?: number;
  /** Oldest messages are removed past this size in bytes; default -1, no limit. */
  readonly maxBytes?: number;
  /** JetStream API timeout in ms; default the connection's (20 s in nats.js). */
  readonly timeoutMs?: number;
}

/** Where a stream begins and ends (JetStream's stream state). */
export interface StreamPosition {
  readonly stream: string;
  /** Sequence of the oldest message held; `lastSeq + 1` when the stream holds none (0 for a new stream). */
  readonly firstSeq: number;
  /** Sequence of the newest message ever stored; 0 for a new stream. */
  readonly lastSeq: number;
  /** Messages held. */
  readonly messages: number;
  /** Bytes held. */
  readonly bytes: number;
}

/** Whether a follower at a stored position can resume from the stream (see {@link resumeFrom}). */
export type ResumeCheck =
  | { readonly ok: true /** Messages after the position: how far behind the follower is. */; readonly lag: number }
  | { readonly ok: false; readonly reason: 'purged' | 'ahead' };

/**
 * Creates the stream, or checks that the existing one has this subject, replica count, dedup window and storage.
 * Returns its position. Throws STREAM_MISMATCH (naming each difference; the stream is left as it is),
 * INVALID_ARGUMENT, UNAVAILABLE, NATS_ERROR.
 */
export async function ensureChangeStream(nc: NatsConnection, options: ChangeStreamOptions): Promise<StreamPosition> {
  const wanted = streamConfig(options);
  const jsm = await manager(nc, options.timeoutMs);
  try {
    return positionOf(checkConfig(await jsm.streams.add(wanted), wanted));
  } catch (err) {
    // The name is taken by a stream of another configuration (or by a concurrent create): say how it differs.
    if ((err as { code?: unknown }).code !== STREAM_NAME_IN_USE) throw replicaErrorOf(err, `create ${wanted.name}`);
  }
  return positionOf(checkConfig(await info(jsm, wanted.name), wanted));
}

/**
 * Checks that the stream exists with this configuration, without creating it. Throws STREAM_NOT_FOUND,
 * STREAM_MISMATCH, UNAVAILABLE, NATS_ERROR.
 */
export async function verifyChangeStream(nc: NatsConnection, options: ChangeStreamOptions): Promise<StreamPosition> {
  const wanted = streamConfig(options);
  return positionOf(checkConfig(await info(await manager(nc, options.timeoutMs), wanted.name), wanted));
}

/** The stream's first and last sequence now. Throws STREAM_NOT_FOUND, UNAVAILABLE, NATS_ERROR. */
export async function readStreamPosition(
  nc: NatsConnection,
  stream: string,
  options: { timeoutMs?: number } = {},
): Promise<StreamPosition> {
  return positionOf(await info(await manager(nc, options.timeoutMs), checkName('a stream name', stream)));
}

/**
 * Whether a follower that has applied everything up to `position` can go on from `stream`: not when the stream no
 * longer holds message `position + 1` (purged or aged out), nor when the position is past the stream's end (the
 * stream was recreated, or is another one); then the follower loads a checkpoint. Otherwise `lag` messages follow.
 */
export function resumeFrom(stream: StreamPosition, position: number): ResumeCheck {
  checkPosition(position);
  if (position > stream.lastSeq) return { ok: false, reason: 'ahead' };
  if (position === stream.lastSeq) return { ok: true, lag: 0 };
  if (stream.messages === 0 || stream.firstSeq > position + 1) return { ok: false, reason: 'purged' };
  return { ok: true, lag: stream.lastSeq - position };
}

/** As {@link resumeFrom}, throwing POSITION_PURGED or POSITION_AHEAD; returns the lag. */
export function assertResumable(stream: StreamPosition, position: number): number {
  const check = resumeFrom(stream, position);
  if (check.ok) return check.lag;
  if (check.reason === 'purged')
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
      `stream ${stream.stream} begins at ${stream.firstSeq} (${stream.messages} messages held): message ${position + 1} is gone`,
    );
  throw new ReplicaError(
    'HEAPLESS_ERR_REPLICA_POSITION_AHEAD',
    `stream ${stream.stream} ends at ${stream.lastSeq}, before position ${position}: another or a recreated stream`,
  );
}

/** Throws INVALID_ARGUMENT unless `position` is a stream position (a non-negative safe integer). */
export function checkPosition(position: number): void {
  if (!Number.isSafeInteger(position) || position < 0)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `a position is a non-negative integer, got ${position}`,
    );
}

/** A manager without its start-up request: a missing JetStream shows in the first real request instead. */
function manager(nc: NatsConnection, timeoutMs: number | undefined): Promise<JetStreamManager> {
  const timeout = timeoutMs === undefined ? undefined : durationMs('timeoutMs', timeoutMs);
  return jetstreamManager(nc, { checkAPI: false, ...(timeout === undefined ? {} : { timeout }) });
}

async function info(jsm: JetStreamManager, name: string): Promise<StreamInfo> {
  try {
    return await jsm.streams.info(name);
  } catch (err) {
    throw replicaErrorOf(err, `stream ${name}`);
  }
}

function streamConfig(options: ChangeStreamOptions): Partial<StreamConfig> & { name: string } {
  const name = checkName('a stream name', options.name);
  const subject = options.subject ?? changeSubject(name);
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `replicas must be 1 to 5 (JetStream's limit), got ${replicas}`,
    );
  const windowMs = options.duplicateWindowMs ?? 120_000;
  if (!Number.isSafeInteger(windowMs) || windowMs < 1)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `duplicateWindowMs must be a positive integer, got ${windowMs}`,
    );
  const maxAgeMs = options.maxAgeMs ?? 0;
  if (!Number.isSafeInteger(maxAgeMs) || maxAgeMs < 0)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `maxAgeMs must be 0 or a positive integer, got ${maxAgeMs}`,
    );
  return {
    name,
    subjects: [subject],
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    storage: options.storage === 'memory' ? StorageType.Memory : StorageType.File,
    num_replicas: replicas,
    duplicate_window: nanos(windowMs),
    max_age: nanos(maxAgeMs),
    max_bytes: options.maxBytes ?? -1,
  };
}

/** The info of a stream whose configuration matches `wanted` in what replicas rely on; STREAM_MISMATCH if not. */
function checkConfig(found: StreamInfo, wanted: Partial<StreamConfig>): StreamInfo {
  const c = found.config;
  const differences: string[] = [];
  const same = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
    JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
  if (!same(c.subjects, wanted.subjects))
    differences.push(`subjects ${JSON.stringify(c.subjects)}, not ${JSON.stringify(wanted.subjects)}`);
  if (c.num_replicas !== wanted.num_replicas)
    differences.push(`${c.num_replicas} replicas, not ${wanted.num_replicas}`);
  if (c.duplicate_window !== wanted.duplicate_window)
    differences.push(`a dedup window of ${c.duplicate_window / 1e6} ms, not ${wanted.duplicate_window! / 1e6} ms`);
  if (c.storage !== wanted.storage) differences.push(`${c.storage} storage, not ${wanted.storage}`);
  if (c.retention !== RetentionPolicy.Limits) differences.push(`${c.retention} retention, not limits`);
  if (differences.length > 0)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_STREAM_MISMATCH',
      `stream ${c.name} exists with ${differences.join('; ')}`,
    );
  return found;
}

function positionOf(info: StreamInfo): StreamPosition {
  const s = info.state;
  return {
    stream: info.config.name,
    firstSeq: s.first_seq,
    lastSeq: s.last_seq,
    messages: s.messages,
    bytes: s.bytes,
  };
}
