/**
 * A replica: the map of a server that follows a change stream on NATS JetStream and writes through it. One entry,
 * {@link openReplica}: it connects and opens the follower (online.ts), or, when NATS cannot be reached at start,
 * serves the local data until it can (offline.ts); either way the caller gets one {@link Replica} to read, write,
 * watch and close. `heapless serve --follow` (packages/actor) is a server around one.
 */
import type { NatsConnection } from '@nats-io/nats-core';
import { describeError, isReplicaError, ReplicaError } from '../errors.js';
import { openLocalFollowerData } from '../follow/follower-open.js';
import { connectToNats } from '../nats/connect.js';
import { OfflineReplica } from './offline.js';
import { followOnline } from './online.js';
import type { Replica, ReplicaOptions } from './replica-options.js';

/**
 * Opens the replica of `options.stream` in `options.dir`: connects to NATS, makes the stream if missing, and starts
 * the follower from the local data, the newest checkpoint in `options.bucket` or a replay. When NATS cannot be
 * reached and `dir` holds follower data of the stream and schema, serves that (writes UNAVAILABLE, `caughtUp:
 * false`) and connects in the background, resuming from the stored position once it can. Throws UNAVAILABLE
 * ("could not connect ...") when NATS cannot be reached and there is no such data, the follower's other errors
 * (ReplicaError: INVALID_ARGUMENT, POSITION_PURGED, POSITION_AHEAD, STREAM_MISMATCH, CHECKPOINT_CORRUPT...) and the
 * map's; nothing stays open then. The caller closes the result.
 */
export async function openReplica(options: ReplicaOptions): Promise<Replica> {
  let nc: NatsConnection;
  try {
    nc = await connectToNats({ servers: options.servers });
  } catch (err) {
    if (!isReplicaError(err, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE')) throw err;
    const local = await openLocalFollowerData({
      dir: options.dir,
      stream: options.stream,
      schema: options.schema,
      ...(options.map === undefined ? {} : { map: options.map }),
    }).catch((e: unknown) => {
      throw isReplicaError(e, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE')
        ? new ReplicaError('HEAPLESS_ERR_REPLICA_UNAVAILABLE', `${err.message}; ${e.message}`)
        : e;
    });
    options.log?.warn(
      { err: describeError(err), position: local.start.position },
      'NATS unreachable at start: serving the local data, connecting in the background',
    );
    return new OfflineReplica(local, options, err);
  }
  return followOnline(nc, options);
}
