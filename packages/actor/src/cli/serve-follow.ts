/**
 * The replica side of `heapless serve --follow`: connects to NATS and opens the follower (follow-online.ts), or,
 * when NATS cannot be reached at start, serves the local data until it can (follow-offline.ts); and gives the
 * server what it needs around it: the KV actor's write sink, `/healthz` and `/metrics` figures, and one close for
 * the follower, the publisher and the connection.
 */
import type { OffHeapMap } from '@heapless/offheap';
import {
  connectToNats,
  describeError,
  type FollowerStart,
  type FollowerStatus,
  isReplicaError,
  openLocalFollowerData,
  ReplicaError,
} from '@heapless/replica';
import type { FastifyBaseLogger } from 'fastify';
import type { KvActorOptions } from '../kv/kv-actor.js';
import type { Metrics } from '../server/metrics.js';
import type { ServeArgs } from './cli-args.js';
import type { FollowArgs } from './follow-args.js';
import { EarlyLog } from './follow-log.js';
import { OfflineFollowing } from './follow-offline.js';
import { type FollowerSide, followOnline } from './follow-online.js';
import { serveEngineOptions } from './serve-config.js';

/** What a following server is made of; {@link close} ends all of it, the map included. */
export interface Following {
  readonly map: OffHeapMap<string, unknown>;
  readonly start: FollowerStart;
  /** The KV actor's options that make it write through the log and leave closing the map to the follower. */
  readonly kvOptions: Pick<KvActorOptions, 'writeSink' | 'close'>;
  /** Logs through the server's logger from now on (before it exists, as JSON lines on stdout). */
  attachLog(log: FastifyBaseLogger): void;
  addMetrics(metrics: Metrics): void;
  /** The follower's state, for `/healthz`. */
  health(): { follower: FollowerStatus };
  /**
   * Resolves once the follower has applied what the stream holds now; at once for a server that started while
   * NATS was unreachable (it serves its local data, `caughtUp: false`, until it reaches NATS).
   */
  waitCaughtUp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the follower of `follow` in `args.data`. When NATS cannot be reached and `args.data` holds follower data
 * of the stream and schema, serves that and connects in the background. Throws UNAVAILABLE ("could not connect
 * ...") when NATS cannot be reached and there is no such data, the follower's other errors (ReplicaError) and the
 * map's.
 */
export async function openFollowing(args: ServeArgs, follow: FollowArgs): Promise<Following> {
  const log = new EarlyLog(args.logLevel);
  let nc: Awaited<ReturnType<typeof connectToNats>>;
  try {
    nc = await connectToNats({ servers: follow.servers });
  } catch (err) {
    if (!isReplicaError(err, 'UNAVAILABLE')) throw err;
    const local = await openLocalFollowerData({
      dir: args.data,
      stream: follow.stream,
      schema: follow.schema,
      map: { sync: args.sync, engine: serveEngineOptions(args.engine) },
    }).catch((e: unknown) => {
      throw isReplicaError(e, 'UNAVAILABLE') ? new ReplicaError('UNAVAILABLE', `${err.message}; ${e.message}`) : e;
    });
    log.warn(
      { err: describeError(err), position: local.start.position },
      'NATS unreachable at start: serving the local data, connecting in the background',
    );
    return following(new OfflineFollowing(local, args, follow, log, err), log);
  }
  return following(await followOnline(nc, args, follow, log), log);
}

function following(side: FollowerSide, log: EarlyLog): Following {
  const close = () => side.close();
  return {
    map: side.map,
    start: side.start,
    kvOptions: { writeSink: side.sink, close },
    attachLog: (target) => log.attach(target),
    addMetrics: (metrics) => addFollowerMetrics(metrics, () => side.status()),
    health: () => ({ follower: side.status() }),
    waitCaughtUp: () => side.waitCaughtUp(),
    close,
  };
}

function addFollowerMetrics(metrics: Metrics, status: () => FollowerStatus): void {
  metrics.addGauge('heapless_replica_position', 'Last stream sequence applied.', () => status().position);
  // NaN while the stream has not been reached since start: the lag is unknown, not 0.
  metrics.addGauge('heapless_replica_lag', 'Messages in the stream after the position.', () => status().lag ?? NaN);
  metrics.addGauge('heapless_replica_apply_rate', 'Messages applied per second (last 5 s).', () => status().applyRate);
  metrics.addGauge('heapless_replica_caught_up', '1 once everything the stream holds is applied.', () =>
    status().caughtUp ? 1 : 0,
  );
  metrics.addGauge('heapless_replica_applied', 'Messages applied since start.', () => status().applied);
}
