/**
 * `redis-benchmark`: redis-server measured by its own C client over one connection, beside the `anchor` column
 * (the same server through ioredis). The gap between the two is what a Node client costs; heapless's typed client
 * pays the same kind of cost, so the anchor column, not this one, is heapless's baseline.
 */
import type { RunContext } from '../harness/benchmark.js';
import { SystemUnavailableError } from '../harness/benchmark.js';
import { findExecutable, REDIS_INSTALL_HINT } from './find-executable.js';
import { freePort } from './free-port.js';
import type { ProcessGroup } from './process-group.js';
import { runRedisBenchmarkCases } from './redis-benchmark-cases.js';
import { openRedis, preloadRedis } from './redis-connection.js';
import { redisServerCommand } from './redis-server-command.js';

/** Starts redis-server, preloads it, runs redis-benchmark at every depth (phase `kv` only); "not available" without the programs. */
export async function runRedisBenchmark(ctx: RunContext, group: ProcessGroup): Promise<void> {
  if (!ctx.phases.has('kv')) return;
  const redisServer = findExecutable('redis-server');
  const redisBenchmark = findExecutable('redis-benchmark');
  if (redisServer === undefined || redisBenchmark === undefined) {
    const missing = redisServer === undefined ? 'redis-server' : 'redis-benchmark';
    throw new SystemUnavailableError(`${missing} is not on PATH; ${REDIS_INSTALL_HINT}`);
  }
  const port = await freePort();
  const server = await group.start(redisServerCommand(redisServer, port, ctx.dataDir));
  const redis = await openRedis(port);
  try {
    await preloadRedis(ctx, redis);
  } finally {
    redis.disconnect();
  }
  await runRedisBenchmarkCases(ctx, redisBenchmark, port);
  await group.stop(server);
}
