/**
 * The parts of a replica that need NATS, made once a connection exists: the change stream (created if missing),
 * the checkpoint store, the follower (which decides between local data, a checkpoint and a replay, or takes over a
 * map already open), the publisher of writes and the write path; and one close for them and the connection.
 */
import type { OffHeapMap } from '@heapless/offheap';
import type { NatsConnection } from '@nats-io/nats-core';
import { ChangePublisher } from '../change/change-publisher.js';
import { ensureChangeStream } from '../change/change-stream.js';
import { CheckpointStore } from '../checkpoint/checkpoint-store.js';
import { describeError, isReplicaError } from '../errors.js';
import { Follower } from '../follow/follower.js';
import { LogWriter } from './log-writer.js';
import { DEFAULT_WRITE_TIMEOUT_MS, type Replica, type ReplicaOptions } from './replica-options.js';

/** A follower with its publisher and connection. */
export interface OnlineReplica extends Replica {
  readonly follower: Follower;
}

/**
 * Makes the NATS parts over `nc`, which this takes over (closed by the result's close, or before this throws).
 * With `localMap` (the map a replica has been serving while NATS was unreachable) the follower takes that map over
 * and resumes from its position; NATS going away again before the follower exists throws UNAVAILABLE then (the
 * caller retries with a new connection), where a plain start goes on without a checkpoint store. Throws the
 * follower's errors (ReplicaError) and the map's; `localMap` stays open and the caller's when this throws.
 */
export async function followOnline(
  nc: NatsConnection,
  options: ReplicaOptions,
  localMap?: OffHeapMap<string, unknown>,
): Promise<OnlineReplica> {
  try {
    let checkpoints: CheckpointStore | undefined;
    try {
      await ensureChangeStream(nc, { name: options.stream });
      if (options.bucket !== undefined) checkpoints = await CheckpointStore.open(nc, { bucket: options.bucket });
    } catch (err) {
      // NATS went away after the connection: a follower with local data serves it meanwhile.
      if (!isReplicaError(err, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE') || localMap !== undefined) throw err;
      options.log?.warn({ err: describeError(err) }, 'NATS unavailable at start: no checkpoint store this run');
    }
    const follower = await Follower.open({
      nc,
      dir: options.dir,
      stream: options.stream,
      schema: options.schema,
      ...(options.maxReplay === undefined ? {} : { maxReplay: options.maxReplay }),
      ...(checkpoints === undefined ? {} : { checkpoints }),
      ...(options.checkpointEvery === undefined || checkpoints === undefined
        ? {}
        : { checkpointEvery: options.checkpointEvery }),
      ...(options.keepCheckpoints === undefined ? {} : { keepCheckpoints: options.keepCheckpoints }),
      ...(options.map === undefined ? {} : { map: options.map }),
      ...(localMap === undefined ? {} : { localMap }),
      ...(options.log === undefined ? {} : { log: options.log }),
    });
    const timeoutMs = options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
    const publisher = new ChangePublisher(nc, { stream: options.stream, schema: options.schema, timeoutMs });
    const writer = new LogWriter(publisher, follower, timeoutMs);
    let closing: Promise<void> | undefined;
    return {
      follower,
      map: follower.map,
      start: follower.start,
      maxChanges: writer.maxChanges,
      write: (changes) => writer.write(changes),
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
