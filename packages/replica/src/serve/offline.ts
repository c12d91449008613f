/**
 * A replica that started while NATS could not be reached: it must go on answering reads from what it holds
 * through an outage of the log, rather than refuse to start. It serves its local data
 * (follower data of the stream and schema followed, opened by `openLocalFollowerData`) read-only, and connects in
 * the background: each attempt waits at most {@link ATTEMPT_MS}, the pause after a failure grows from
 * {@link FIRST_PAUSE_MS} to {@link MAX_PAUSE_MS}. Once connected, a follower takes the open map over (the KV actor
 * goes on reading the same map) and resumes from its stored position, so nothing is missed. Meanwhile `status()`
 * says `caughtUp: false`, an unknown lag, and since when NATS is unreachable; writes fail at once with
 * `HEAPLESS_ERR_REPLICA_UNAVAILABLE`. When the stream cannot be followed from the map (purged past its position, recreated, of another
 * configuration), it stops trying and says why in `failure` and `lastError`, and goes on serving the local data as
 * it is; a restart with NATS reachable then loads a checkpoint or replays.
 */
import type { WriteOp } from '@heapless/client/protocol';
import { DEFAULT_CHANGE_LIMITS } from '../change/change-format.js';
import { describeError, isReplicaError, ReplicaError, type ReplicaErrorCode } from '../errors.js';
import type { LocalFollowerData } from '../follow/follower-open.js';
import type { FollowerStatus } from '../follow/follower-options.js';
import { connectToNats } from '../nats/connect.js';
import { Backoff, retry } from '../nats/retry.js';
import { followOnline, type OnlineReplica } from './online.js';
import type { Replica, ReplicaOptions } from './replica-options.js';

/** Longest wait for one connection attempt: a close waits for the attempt in flight, so it stays short. */
const ATTEMPT_MS = 1_000;
/** Pause after the first failed attempt in the background (the start's own attempt came just before). */
const FIRST_PAUSE_MS = 250;
/** The pause doubles after each failure up to this, so that a long outage costs one attempt every 5 s. */
const MAX_PAUSE_MS = 5_000;

/**
 * Why the stream cannot be followed from the map, which no later attempt mends: the stream purged past the map's
 * position or recreated, of another configuration, or the map not of it. Any other failure of an attempt (NATS or
 * JetStream not there yet, a refusal that an operator may lift) is tried again after the pause, and shown meanwhile.
 */
const CANNOT_RESUME: ReadonlySet<ReplicaErrorCode> = new Set<ReplicaErrorCode>([
  'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
  'HEAPLESS_ERR_REPLICA_POSITION_AHEAD',
  'HEAPLESS_ERR_REPLICA_STREAM_MISMATCH',
  'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
]);

/** A replica serving its local data until it reaches NATS; {@link close} ends it all. */
export class OfflineReplica implements Replica {
  readonly map: LocalFollowerData['map'];
  readonly start: LocalFollowerData['start'];
  readonly maxChanges = DEFAULT_CHANGE_LIMITS.maxChanges;
  #online: OnlineReplica | undefined;
  /** Why the stream cannot be followed from the map; set once, ends the attempts. */
  #failure: Error | undefined;
  #lastError: string;
  #attempts = 1;
  readonly #since = new Date();
  readonly #backoff = new Backoff(FIRST_PAUSE_MS, MAX_PAUSE_MS);
  #stopping = false;
  #closing: Promise<void> | undefined;
  readonly #connecting: Promise<void>;

  /**
   * Takes over `local` (closed by {@link close}, or by the follower that takes it over) and starts connecting.
   * `firstError` is why the start's own attempt failed.
   */
  constructor(
    local: LocalFollowerData,
    private readonly options: ReplicaOptions,
    firstError: Error,
  ) {
    this.map = local.map;
    this.start = local.start;
    this.#lastError = describeError(firstError);
    this.#connecting = this.#connect();
  }

  /** The follower's status once it exists; before, the local data's position, not caught up, lag unknown. */
  status(): FollowerStatus {
    if (this.#online !== undefined) return this.#online.follower.status();
    const failure = this.#failure === undefined ? null : describeError(this.#failure);
    return {
      stream: this.options.stream,
      schema: this.options.schema,
      position: this.start.position,
      lag: null,
      caughtUp: false,
      applyRate: 0,
      applied: 0,
      lastError:
        failure ??
        `NATS unreachable since start (${this.#since.toISOString()}; attempts to connect: ${this.#attempts}, ` +
          `the last: ${this.#lastError})`,
      failure,
      start: this.start,
    };
  }

  /** At once before the follower exists (the local data is what there is to serve), then the follower's. */
  waitCaughtUp(): Promise<void> {
    return this.#online?.follower.waitCaughtUp() ?? Promise.resolve();
  }

  /**
   * Stops connecting (a pause ends at once; an attempt in flight, at most {@link ATTEMPT_MS}, or a follower being
   * opened is waited for), then closes the follower, publisher and connection, or the map alone. Idempotent.
   */
  close(): Promise<void> {
    this.#stopping = true;
    this.#backoff.wake();
    this.#closing ??= this.#connecting.then(() =>
      this.#online === undefined ? this.map.close() : this.#online.close(),
    );
    return this.#closing;
  }

  /** Through the log once the follower exists; UNAVAILABLE at once before. */
  write(changes: readonly WriteOp[]): Promise<{ sequence: number }> {
    if (this.#online !== undefined) return this.#online.write(changes);
    const why =
      this.#failure === undefined
        ? `NATS has been unreachable since this server started (${this.#lastError})`
        : `this server cannot follow its change stream (${describeError(this.#failure)})`;
    return Promise.reject(
      new ReplicaError(
        'HEAPLESS_ERR_REPLICA_UNAVAILABLE',
        `the write was not stored in the change log: ${why}; reads serve local data`,
      ),
    );
  }

  /** Attempts until connected and followed, a failure that retrying cannot mend, or close. */
  async #connect(): Promise<void> {
    try {
      await retry(() => this.#attempt(), {
        backoff: this.#backoff,
        pauseFirst: true,
        stopped: () => this.#stopping,
        retryable: (err) => isReplicaError(err) && !CANNOT_RESUME.has(err.code),
        onRetry: (err) => {
          this.#lastError = describeError(err);
        },
      });
    } catch (err) {
      this.#failure = err as Error;
      this.options.log?.warn(
        { err: describeError(this.#failure) },
        'the stream cannot be followed: serving the local data',
      );
    }
  }

  /** One connection attempt, and the follower over the map once connected. */
  async #attempt(): Promise<void> {
    this.#attempts++;
    const nc = await connectToNats({ servers: this.options.servers, timeout: ATTEMPT_MS });
    if (this.#stopping) {
      await nc.close();
      return;
    }
    this.#online = await followOnline(nc, this.options, this.map);
    this.options.log?.info(
      { position: this.start.position, attempts: this.#attempts },
      'connected to NATS: following the stream from the local position',
    );
  }
}
