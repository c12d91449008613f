/**
 * An ioredis connection to the benchmark's redis-server, and the preload of N keys through it (both the ioredis
 * cases and redis-benchmark read the same preloaded keys).
 */
import { Redis } from 'ioredis';
import type { RunContext } from '../harness/benchmark.js';
import { hundredByteValue, keyOf } from './cases.js';
import { LOOPBACK } from './free-port.js';

/** Commands per pipeline while preloading. */
const PRELOAD_BATCH = 1000;

/** Connects to the redis-server on the loopback `port`; the caller must `disconnect()` it. */
export async function openRedis(port: number): Promise<Redis> {
  const redis = new Redis({
    host: LOOPBACK,
    port,
    lazyConnect: true,
    // Fail instead of queueing or reconnecting: a benchmark must not measure a retry loop.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  return redis;
}

/** Writes `key:<i>` → the 100-byte value for every i < N, in pipelines of 1000. */
export async function preloadRedis(ctx: RunContext, redis: Redis): Promise<void> {
  const value = hundredByteValue();
  const ticker = ctx.progress('preload', ctx.records);
  for (let first = 0; first < ctx.records; first += PRELOAD_BATCH) {
    const pipeline = redis.pipeline();
    const end = Math.min(ctx.records, first + PRELOAD_BATCH);
    for (let i = first; i < end; i++) pipeline.set(keyOf(i), value);
    await execOrThrow(pipeline.exec());
    ticker.update(end);
  }
  ticker.finish();
}

/** Awaits a pipeline's results and throws the first command error. */
export async function execOrThrow(results: Promise<[Error | null, unknown][] | null>): Promise<void> {
  for (const [error] of (await results) ?? []) if (error !== null) throw error;
}
