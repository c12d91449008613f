/**
 * `heapless serve --follow`: the server's map is a replica (`openReplica` of packages/replica, which follows the
 * change stream, writes through it, and serves its local data while NATS cannot be reached). This file maps the
 * flags to the replica's options and wires the replica into the server: the KV actor's write sink (replica errors
 * as wire codes), the log, `/healthz` and `/metrics`.
 */
import { HeaplessError, type WriteOp } from '@heapless/client/protocol';
import type { OffHeapMap } from '@heapless/offheap';
import {
  type FollowerStart,
  type FollowerStatus,
  openReplica,
  type Replica,
  type ReplicaOptions,
} from '@heapless/replica';
import type { FastifyBaseLogger } from 'fastify';
import type { KvActorOptions } from '../kv/kv-actor.js';
import type { WriteSink } from '../kv/write-sink.js';
import type { Metrics } from '../server/metrics.js';
import { packageWireCode } from '../server/wire-error.js';
import type { ServeArgs } from './cli-args.js';
import type { FollowArgs } from './follow-args.js';
import { EarlyLog } from './follow-log.js';
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

/** The replica options of a server's flags. */
function replicaOptions(args: ServeArgs, follow: FollowArgs, log: ReplicaOptions['log']): ReplicaOptions {
  return {
    dir: args.data,
    servers: follow.servers,
    stream: follow.stream,
    schema: follow.schema,
    ...(follow.maxReplay === undefined ? {} : { maxReplay: follow.maxReplay }),
    ...(follow.bucket === undefined ? {} : { bucket: follow.bucket }),
    ...(follow.checkpointEvery === undefined ? {} : { checkpointEvery: follow.checkpointEvery }),
    ...(follow.keepCheckpoints === undefined ? {} : { keepCheckpoints: follow.keepCheckpoints }),
    writeTimeoutMs: follow.writeTimeoutMs,
    map: { sync: args.sync, engine: serveEngineOptions(args.engine) },
    ...(log === undefined ? {} : { log }),
  };
}

/**
 * Opens the replica of `follow` in `args.data` (see `openReplica`). Throws as it does: UNAVAILABLE ("could not
 * connect ...") when NATS cannot be reached and there is no follower data of the stream and schema, the
 * follower's other errors (ReplicaError) and the map's.
 */
export async function openFollowing(args: ServeArgs, follow: FollowArgs): Promise<Following> {
  const log = new EarlyLog(args.logLevel);
  const replica = await openReplica(replicaOptions(args, follow, log));
  const close = () => replica.close();
  return {
    map: replica.map,
    start: replica.start,
    kvOptions: { writeSink: writeSink(replica), close },
    attachLog: (target) => log.attach(target),
    addMetrics: (metrics) => addFollowerMetrics(metrics, () => replica.status()),
    health: () => ({ follower: replica.status() }),
    waitCaughtUp: () => replica.waitCaughtUp(),
    close,
  };
}

/** The KV actor's writes through the replica, its errors as the codes a client sees. */
function writeSink(replica: Replica): WriteSink {
  return {
    maxOps: replica.maxChanges,
    write: (ops: readonly WriteOp[]) =>
      replica.write(ops).catch((err: unknown) => {
        throw wireError(err);
      }),
  };
}

/**
 * A replica's write error as the wire's: the code the wire table (`WIRE_CODES`) gives its code (a write too large keeps
 * saying so), UNAVAILABLE for any other failure.
 */
function wireError(err: unknown): HeaplessError {
  const message = err instanceof Error ? err.message : String(err);
  return new HeaplessError(packageWireCode(err) ?? 'UNAVAILABLE', message, { cause: err });
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
