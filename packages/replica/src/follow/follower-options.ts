/**
 * What a follower is given (its options, checked into settings) and what it tells (how it started, its state).
 */
import type { MapBatch, OffHeapMap } from '@heapless/offheap';
import type { NatsConnection } from '@nats-io/nats-core';
import { checkName, checkSchemaId } from '../change/change-format.js';
import type { ChangeMessage } from '../change/change-message.js';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.js';
import { durationMs } from '../duration.js';
import { ReplicaError } from '../errors.js';
import type { MapOpenOptions } from './local-data.js';
import type { StartPlan } from './start-plan.js';

/** Default most messages replayed at start before the newest checkpoint is loaded instead. */
export const DEFAULT_MAX_REPLAY = 100_000;
/** Options of {@link Follower.open}. */
export interface FollowerOptions {
  /** The NATS connection; the caller owns it and closes it after the follower. */
  readonly nc: NatsConnection;
  /** The map's data directory. */
  readonly dir: string;
  /** The change stream followed. */
  readonly stream: string;
  /** The schema id of the values followed; local data or messages of another are not applied. */
  readonly schema: string;
  /** Most messages replayed at start; a longer lag loads the newest checkpoint if it is ahead. Default 100,000. */
  readonly maxReplay?: number;
  /** Where checkpoints are loaded from and published to; without it the follower only replays. */
  readonly checkpoints?: CheckpointStore;
  /**
   * Publish a checkpoint after every this many messages applied (needs `checkpoints`); default never. A publish that
   * fails is logged and tried again after 1 s, 2 s, 4 s... (at most 60 s apart) until one succeeds.
   */
  readonly checkpointEvery?: number;
  /** Checkpoints kept per schema when publishing; default 3. */
  readonly keepCheckpoints?: number;
  /** How the map is opened (sync, engine tuning, images); not its directory. */
  readonly map?: MapOpenOptions;
  /**
   * The map of `dir`, already open and maybe being read (a server that served its local data while NATS could not
   * be reached; see {@link openLocalFollowerData}). The follower takes it over instead of opening the directory:
   * it resumes from the map's stored position and never replaces or drops it, whatever `maxReplay` and
   * `checkpoints` say. When the map cannot resume (another stream or schema: INVALID_ARGUMENT; the stream purged
   * past its position: POSITION_PURGED; a recreated stream: POSITION_AHEAD) `open` throws and the map stays the
   * caller's, open; once `open` resolves the follower owns it and closes it.
   */
  readonly localMap?: OffHeapMap<string, unknown>;
  /** Most messages per applied batch; default 256. */
  readonly maxBatchMessages?: number;
  /** How long one pull waits for messages (and so how fast a lost node is noticed); default 5 s. */
  readonly fetchExpiresMs?: number;
  /**
   * Called with the messages of each batch (those above the stored position) before they are written, with the
   * map batch they are written in: what it adds (derived records, metadata) is applied atomically with them, and
   * so exactly once per message.
   */
  readonly onBatch?: (messages: readonly ChangeMessage[], write: MapBatch<string, unknown>) => void;
  /** Told about what the follower does (start decision, checkpoint loaded or published, outages). */
  readonly log?: FollowerLog;
}

/** Where a follower reports what it does; pino's logger fits. */
export interface FollowerLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** How the follower got its data at open. */
export interface FollowerStart {
  /** `resume`: its local data; `checkpoint`: a downloaded checkpoint; `replay`: from the stream's start. */
  readonly kind: StartPlan['kind'];
  /** Why the local data was not used, if it was not. */
  readonly reason: string | null;
  /** The checkpoint loaded, if one was. */
  readonly checkpointId: string | null;
  /** The position the follower started consuming after. */
  readonly position: number;
  /** How the map was loaded: 'image' (no scan), 'scan' or 'memory'; and writes replayed onto the image. */
  readonly mapSource: string;
  readonly mapReplayed: number;
  /**
   * Where the map image's checksums were checked: `'open'` by reading it at the open, `'stream'` as a downloaded
   * checkpoint's image was written (the open then maps it unread); null without an image.
   */
  readonly mapImageCheck: 'open' | 'stream' | null;
  /** Milliseconds of the checkpoint's download, when one was loaded. */
  readonly downloadMs: number | null;
  /** Milliseconds from `open` to consuming. */
  readonly ms: number;
}

/** A follower's state now, for `/healthz` and `/metrics`. */
export interface FollowerStatus {
  readonly stream: string;
  readonly schema: string;
  /** The last sequence applied. */
  readonly position: number;
  /**
   * Messages known to be in the stream after the position (the newest sequence seen minus the position); null
   * when the stream has not been reached since start, so the lag is unknown.
   */
  readonly lag: number | null;
  /** Whether the follower has applied everything the stream held when it last heard from it, and is reading. */
  readonly caughtUp: boolean;
  /** Messages applied per second over the last few seconds. */
  readonly applyRate: number;
  /** Messages applied since open. */
  readonly applied: number;
  /** Why reading is interrupted now (NATS unreachable...), as `CODE: message`, or null. */
  readonly lastError: string | null;
  /** The error that stopped the follower for good, as `CODE: message` (e.g. `SCHEMA_MISMATCH: ...`), or null. */
  readonly failure: string | null;
  readonly start: FollowerStart;
}

/** The options with their defaults, checked. */
export type FollowerSettings = FollowerOptions &
  Required<Pick<FollowerOptions, 'maxReplay' | 'keepCheckpoints' | 'maxBatchMessages'>>;

/** Checks `options` and fills in the defaults. Throws INVALID_ARGUMENT. */
export function followerSettings(options: FollowerOptions): FollowerSettings {
  checkName('a stream name', options.stream);
  checkSchemaId(options.schema);
  if (options.fetchExpiresMs !== undefined) durationMs('fetchExpiresMs', options.fetchExpiresMs, 1_000);
  if (options.checkpointEvery !== undefined) {
    positive('checkpointEvery', options.checkpointEvery);
    if (options.checkpoints === undefined)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        'checkpointEvery needs a checkpoint store (checkpoints)',
      );
  }
  return {
    ...options,
    maxReplay: nonNegative('maxReplay', options.maxReplay ?? DEFAULT_MAX_REPLAY),
    keepCheckpoints: positive('keepCheckpoints', options.keepCheckpoints ?? 3),
    maxBatchMessages: positive('maxBatchMessages', options.maxBatchMessages ?? 256),
  };
}

function positive(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1)
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `${name} must be a positive integer, got ${v}`);
  return v;
}

function nonNegative(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 0)
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `${name} must be a non-negative integer, got ${v}`);
  return v;
}
