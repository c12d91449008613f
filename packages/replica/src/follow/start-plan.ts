/**
 * How a follower starts (FORMAT.md "Follower metadata"): from its local data when that data is of the
 * schema and stream followed and the stream still holds what follows it within `maxReplay` messages; otherwise from
 * the newest checkpoint of the schema, or, with none, by replaying the stream from its start. A pure function of
 * what is known at start, so that every case is a line of a table test.
 */
import { resumeFrom, type StreamPosition } from '../change/change-stream.js';
import { ReplicaError } from '../errors.js';
import type { FollowerState } from './follower-meta.js';

/** Why the local data was not used as it is. */
export type ReloadReason = 'no-local-data' | 'schema-changed' | 'stream-changed' | 'purged' | 'lag';

/** What a follower does at start. */
export type StartPlan =
  /** Open the local data and consume from its position + 1. */
  | { readonly kind: 'resume'; readonly position: number; readonly lag: number | undefined }
  /** Replace the local data by the checkpoint (whose position is `position`) and consume from there. */
  | {
      readonly kind: 'checkpoint';
      readonly reason: ReloadReason;
      readonly checkpointId: string;
      readonly position: number;
    }
  /** Drop the local data and replay the stream from its first message. */
  | { readonly kind: 'replay'; readonly reason: ReloadReason };

/** What the plan is made from. */
export interface StartFacts {
  /** The local data's metadata (all undefined for an empty directory). */
  readonly local: FollowerState;
  readonly schema: string;
  readonly stream: string;
  /** The stream now, or undefined when NATS cannot be asked (then the local data is used if it can be). */
  readonly streamPosition: StreamPosition | undefined;
  /** Most messages replayed at start before a checkpoint is preferred. */
  readonly maxReplay: number;
  /** The newest checkpoint of `schema`, or undefined when there is none (or it could not be asked for). */
  readonly newest: { readonly id: string; readonly position: number } | undefined;
}

/**
 * The start plan. Throws POSITION_PURGED (the stream no longer holds what the local data, or an empty follower,
 * needs next, and there is no checkpoint to load), POSITION_AHEAD (the local position is past the stream's end: a
 * recreated or another stream), UNAVAILABLE (no usable local data and NATS cannot be asked).
 */
export function planStart(facts: StartFacts): StartPlan {
  const { local, schema, stream, streamPosition, newest } = facts;
  const reason = reloadReason(facts);
  if (reason === undefined) {
    if (streamPosition === undefined) return { kind: 'resume', position: local.position!, lag: undefined };
    const check = resumeFrom(streamPosition, local.position!);
    if (!check.ok) throw resumeError(check.reason, stream, streamPosition, local.position!);
    return { kind: 'resume', position: local.position!, lag: check.lag };
  }
  if (streamPosition === undefined && reason !== 'lag')
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_UNAVAILABLE',
      `no usable local data (${reason}) and NATS cannot be reached`,
    );
  // A checkpoint helps only if it is ahead of the local data it would replace (for a lagging follower).
  const usable = newest !== undefined && (reason !== 'lag' || newest.position > local.position!);
  if (usable) return { kind: 'checkpoint', reason, checkpointId: newest.id, position: newest.position };
  if (reason === 'lag') return { kind: 'resume', position: local.position!, lag: lagOf(streamPosition, local) };
  if (reason === 'purged')
    throw resumeError('purged', stream, streamPosition!, local.position!, `and no checkpoint of schema ${schema}`);
  // From the start: the stream must still hold its first message.
  const check = resumeFrom(streamPosition!, 0);
  if (!check.ok) throw resumeError(check.reason, stream, streamPosition!, 0, `and no checkpoint of schema ${schema}`);
  return { kind: 'replay', reason };
}

/**
 * Why the local data cannot be used as it is, or undefined when it can (then no checkpoint need be looked for).
 */
export function reloadReason(facts: Omit<StartFacts, 'newest'>): ReloadReason | undefined {
  const { local, schema, stream, streamPosition, maxReplay } = facts;
  if (local.position === undefined) return 'no-local-data';
  if (local.schema !== schema) return 'schema-changed';
  if (local.stream !== stream) return 'stream-changed';
  if (streamPosition === undefined) return undefined;
  const check = resumeFrom(streamPosition, local.position);
  if (!check.ok) return check.reason === 'purged' ? 'purged' : undefined; // ahead: reported by the caller
  return check.lag > maxReplay ? 'lag' : undefined;
}

function lagOf(stream: StreamPosition | undefined, local: FollowerState): number | undefined {
  return stream === undefined ? undefined : Math.max(0, stream.lastSeq - local.position!);
}

function resumeError(
  reason: 'purged' | 'ahead',
  stream: string,
  position: StreamPosition,
  at: number,
  more = '',
): ReplicaError {
  if (reason === 'purged')
    return new ReplicaError(
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
      `stream ${stream} begins at ${position.firstSeq}: message ${at + 1} is gone${more === '' ? '' : ` ${more}`}`,
    );
  return new ReplicaError(
    'HEAPLESS_ERR_REPLICA_POSITION_AHEAD',
    `stream ${stream} ends at ${position.lastSeq}, before the local position ${at}: another or a recreated stream`,
  );
}
