/**
 * What {@link openReplica} is given (a plain options object: data directory, NATS servers, stream, schema, map
 * options, log) and what it hands back: a {@link Replica}, the map a server reads with the write path through the
 * change log, the same shape whether NATS was reachable at start or not.
 */
import type { WriteOp } from '@heapless/client/protocol';
import type { OffHeapMap } from '@heapless/offheap';
import type { FollowerLog, FollowerStart, FollowerStatus } from '../follow/follower-options.js';
import type { MapOpenOptions } from '../follow/local-data.js';

/** Options of `openReplica`. */
export interface ReplicaOptions {
  /** The map's data directory; the stream position is stored with its records. */
  readonly dir: string;
  /** `nats://host:port`, or the URLs of a cluster's nodes. */
  readonly servers: string | string[];
  /** The change stream followed (created if missing). */
  readonly stream: string;
  /** The schema id of the values; local data or a checkpoint of another schema is not used. */
  readonly schema: string;
  /** Most messages replayed at start before the newest checkpoint is loaded instead; default 100,000. */
  readonly maxReplay?: number;
  /** The object store bucket of checkpoints (loaded at start, published to); none without it. */
  readonly bucket?: string;
  /** Publish a checkpoint after every this many messages applied (needs `bucket`); default never. */
  readonly checkpointEvery?: number;
  /** Checkpoints kept per schema and stream when publishing; default 3. */
  readonly keepCheckpoints?: number;
  /** How long a write may take to be in the log and applied here before it fails with UNAVAILABLE; default 5 s. */
  readonly writeTimeoutMs?: number;
  /** How the map is opened (sync, engine tuning); not its directory. */
  readonly map?: MapOpenOptions;
  /** Told about the start decision, checkpoints, outages and reconnection; pino's logger fits. */
  readonly log?: FollowerLog;
}

/** The default of {@link ReplicaOptions.writeTimeoutMs}. */
export const DEFAULT_WRITE_TIMEOUT_MS = 5_000;

/** A running replica: a map following its change stream, written through it. {@link close} ends it all. */
export interface Replica {
  /** The map to read; written only by the replica. Closed by {@link close}. */
  readonly map: OffHeapMap<string, unknown>;
  /** How the map got its data at start. */
  readonly start: FollowerStart;
  /** Most changes one {@link write} holds (a change message's limit, FORMAT.md). */
  readonly maxChanges: number;
  /**
   * Puts `changes` in the change log as one message and resolves, with its sequence, once this replica has applied
   * it (a writer reads its own writes here). Rejects with a ReplicaError whose message says what happened to the
   * write: TOO_MANY_CHANGES or MESSAGE_TOO_LARGE (no message holds it), KEY_TOO_LARGE, VALUE_TOO_LARGE, or
   * UNAVAILABLE (not stored in the log, not applied within `writeTimeoutMs`, NATS unreachable since start, or the
   * replica stopped following).
   */
  write(changes: readonly WriteOp[]): Promise<{ sequence: number }>;
  /** The follower's state, for `/healthz` and `/metrics`. */
  status(): FollowerStatus;
  /**
   * Resolves once what the stream holds now is applied (rejects as `Follower.waitCaughtUp`); at once while NATS
   * has not been reached since start (the local data is what there is to serve).
   */
  waitCaughtUp(): Promise<void>;
  /** Ends everything: connecting, the follower, the publisher, the connection and the map. Idempotent. */
  close(): Promise<void>;
}
