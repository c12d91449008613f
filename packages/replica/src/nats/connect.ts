/**
 * A NATS connection set up the way a replica needs it: it reconnects for ever (a follower outlives any outage of
 * NATS; nats.js gives up after 10 attempts by default), quickly (250 ms between attempts instead of 2 s, so that a
 * restarted node is found again at once), notices a silent peer within about 20 s (a ping every 10 s, two
 * unanswered pings end the connection), and builds no error before it is needed: with its "async traces" on,
 * nats.js makes two Errors, stacks captured, for every request it sends (a publish is one), in case it fails. The
 * replica's errors say what failed in their message instead.
 */
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { replicaErrorOf } from './nats-errors.js';

/** Options of {@link connectToNats}; any nats.js connection option may be given too, and wins. */
export interface ConnectOptions extends NodeConnectionOptions {
  /** `nats://host:port`, or several servers of one cluster. */
  readonly servers: string | string[];
}

/**
 * Opens a connection. Rejects with UNAVAILABLE when no server accepts the first connection within `timeout`
 * (default 5 s). The caller owns the connection: `await nc.close()` (or `nc.drain()`) when done.
 */
export async function connectToNats(options: ConnectOptions): Promise<NatsConnection> {
  try {
    return await connect({
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      pingInterval: 10_000,
      maxPingOut: 2,
      timeout: 5_000,
      noAsyncTraces: true,
      ...options,
    });
  } catch (err) {
    throw replicaErrorOf(err, `could not connect to ${[options.servers].flat().join(', ')}`);
  }
}
