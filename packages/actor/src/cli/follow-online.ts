/**
 * The parts of a following server that need NATS, made once a connection exists: the change stream (created if
 * missing), the checkpoint store, the follower (which decides between local data, a checkpoint and a replay, or
 * takes over a map already open), the publisher of writes and the KV actor's write sink; and one close for them
 * and the connection.
 */
import type { OffHeapMap } from '@heapless/offheap';
import {
  ChangePublisher,
  CheckpointStore,
  describeError,
  ensureChangeStream,
  Follower,
  type FollowerLog,
  type FollowerOptions,
  type FollowerStart,
  type FollowerStatus,
  isReplicaError,
} from '@heapless/replica';
import type { WriteSink } from '../kv/write-sink.js';
import type { ServeArgs } from './cli-args.js';
import type { FollowArgs } from './follow-args.js';
import { LogWriteSink } from './follow-sink.js';
import { serveEngineOptions } from './serve-config.js';

/** What a following server's replica side gives the server, whether NATS was reached yet or not. */
export interface FollowerSide {
  /** The map the KV actor reads; closed by {@link close}. */
  readonly map: OffHeapMap<string, unknown>;
  /** How the map got its data at start. */
  readonly start: FollowerStart;
  /** The KV actor's writes. */
  readonly sink: WriteSink;
  /** For `/healthz` and `/metrics`. */
  status(): FollowerStatus;
  /** Resolves once what the stream holds now is applied (rejects as `Follower.waitCaughtUp`). */
  waitCaughtUp(): Promise<void>;
  /** Ends everything, the map included. Idempotent. */
  close(): Promise<void>;
}

/** A follower with its publisher and connection. */
export interface OnlineFollowing extends FollowerSide {
  readonly follower: Follower;
}

/**
 * Makes the NATS parts over `nc`, which this takes over (closed by the result's close, or before this throws).
 * With `localMap` (the map a server has been serving while NATS was unreachable) the follower takes that map over
 * and resumes from its position; NATS going away again before the follower exists throws UNAVAILABLE then (the
 * caller retries with a new connection), where a plain start goes on without a checkpoint store. Throws the
 * follower's errors (ReplicaError) and the map's; `localMap` stays open and the caller's when this throws.
 */
export async function followOnline(
  nc: FollowerOptions['nc'],
  args: ServeArgs,
  follow: FollowArgs,
  log: FollowerLog,
  localMap?: OffHeapMap<string, unknown>,
): Promise<OnlineFollowing> {
  try {
    let checkpoints: CheckpointStore | undefined;
    try {
      await ensureChangeStream(nc, { name: follow.stream });
      if (follow.bucket !== undefined) checkpoints = await CheckpointStore.open(nc, { bucket: follow.bucket });
    } catch (err) {
      // NATS went away after the connection: a follower with local data serves it meanwhile.
      if (!isReplicaError(err, 'UNAVAILABLE') || localMap !== undefined) throw err;
      log.warn({ err: describeError(err) }, 'NATS unavailable at start: no checkpoint store this run');
    }
    const follower = await Follower.open({
      nc,
      dir: args.data,
      stream: follow.stream,
      schema: follow.schema,
      ...(follow.maxReplay === undefined ? {} : { maxReplay: follow.maxReplay }),
      ...(checkpoints === undefined ? {} : { checkpoints }),
      ...(follow.checkpointEvery === undefined || checkpoints === undefined
        ? {}
        : { checkpointEvery: follow.checkpointEvery }),
      ...(follow.keepCheckpoints === undefined ? {} : { keepCheckpoints: follow.keepCheckpoints }),
      map: { sync: args.sync, engine: serveEngineOptions(args.engine) },
      ...(localMap === undefined ? {} : { localMap }),
      log,
    });
    const publisher = new ChangePublisher(nc, {
      stream: follow.stream,
      schema: follow.schema,
      timeoutMs: follow.writeTimeoutMs,
    });
    let closing: Promise<void> | undefined;
    return {
      follower,
      map: follower.map,
      start: follower.start,
      sink: new LogWriteSink(publisher, follower, follow.writeTimeoutMs),
      status: () => follower.status(),
      waitCaughtUp: () => follower.waitCaughtUp(),
      close() {
        closing ??= (async () => {
          publisher.close();
          await follower.close();
          await nc.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await nc.close();
    throw err;
  }
}
