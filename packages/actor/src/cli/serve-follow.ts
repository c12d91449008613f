/**
 * The replica side of `heapless serve --follow`: connects to NATS, makes sure the change stream exists, opens the
 * follower (which decides between local data, a checkpoint and a replay, then consumes the stream into the map),
 * and gives the server what it needs around it: the KV actor's write sink, `/healthz` and `/metrics` figures, and
 * one close for the follower, the publisher and the connection.
 */
import type { OffHeapMap } from '@heapless/offheap';
import {
  ChangePublisher,
  CheckpointStore,
  connectToNats,
  ensureChangeStream,
  Follower,
  type FollowerLog,
  type FollowerStart,
  type FollowerStatus,
  isReplicaError,
} from '@heapless/replica';
import type { FastifyBaseLogger } from 'fastify';
import type { KvActorOptions } from '../kv/kv-actor.js';
import type { Metrics } from '../server/metrics.js';
import type { ServeArgs } from './cli-args.js';
import type { FollowArgs } from './follow-args.js';
import { LogWriteSink } from './follow-sink.js';
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
  /** Resolves once the follower has applied what the stream holds now. */
  waitCaughtUp(): Promise<void>;
  close(): Promise<void>;
}

/** Opens the follower of `follow` in `args.data`. Throws the follower's errors (ReplicaError) and the map's. */
export async function openFollowing(args: ServeArgs, follow: FollowArgs): Promise<Following> {
  const log = new EarlyLog(args.logLevel);
  const nc = await connectToNats({ servers: follow.servers });
  try {
    let checkpoints: CheckpointStore | undefined;
    try {
      await ensureChangeStream(nc, { name: follow.stream });
      if (follow.bucket !== undefined) checkpoints = await CheckpointStore.open(nc, { bucket: follow.bucket });
    } catch (err) {
      // NATS went away after the connection: a follower with local data serves it meanwhile.
      if (!isReplicaError(err, 'UNAVAILABLE')) throw err;
      log.warn({ err: err.message }, 'NATS unavailable at start: no checkpoint store this run');
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
      log,
    });
    const publisher = new ChangePublisher(nc, {
      stream: follow.stream,
      schema: follow.schema,
      timeoutMs: follow.writeTimeoutMs,
    });
    const sink = new LogWriteSink(publisher, follower, follow.writeTimeoutMs);
    let closing: Promise<void> | undefined;
    const close = () => {
      closing ??= (async () => {
        publisher.close();
        await follower.close();
        await nc.close();
      })();
      return closing;
    };
    return {
      map: follower.map,
      start: follower.start,
      kvOptions: { writeSink: sink, close },
      attachLog: (target) => log.attach(target),
      addMetrics: (metrics) => addFollowerMetrics(metrics, follower),
      health: () => ({ follower: follower.status() }),
      waitCaughtUp: () => follower.waitCaughtUp(),
      close,
    };
  } catch (err) {
    await nc.close();
    throw err;
  }
}

function addFollowerMetrics(metrics: Metrics, follower: Follower): void {
  metrics.addGauge('heapless_replica_position', 'Last stream sequence applied.', () => follower.status().position);
  metrics.addGauge('heapless_replica_lag', 'Messages in the stream after the position.', () => follower.status().lag);
  metrics.addGauge(
    'heapless_replica_apply_rate',
    'Messages applied per second (last 5 s).',
    () => follower.status().applyRate,
  );
  metrics.addGauge('heapless_replica_caught_up', '1 once everything the stream holds is applied.', () =>
    follower.status().caughtUp ? 1 : 0,
  );
  metrics.addGauge('heapless_replica_applied', 'Messages applied since start.', () => follower.status().applied);
}

/** pino's numbers for the levels a follower logs at. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 99 };

/** The follower's log: pino-shaped JSON lines on stdout until the server's logger exists, then that logger. */
class EarlyLog implements FollowerLog {
  #target: FastifyBaseLogger | undefined;
  readonly #min: number;

  constructor(level: string) {
    this.#min = LEVELS[level] ?? LEVELS.info!;
  }

  attach(target: FastifyBaseLogger): void {
    this.#target = target;
  }

  info(details: object, message: string): void {
    if (this.#target !== undefined) this.#target.info(details, message);
    else this.#write(30, details, message);
  }

  warn(details: object, message: string): void {
    if (this.#target !== undefined) this.#target.warn(details, message);
    else this.#write(40, details, message);
  }

  #write(level: number, details: object, msg: string): void {
    if (level < this.#min) return;
    process.stdout.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, ...details, msg })}\n`);
  }
}
