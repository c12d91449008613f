/**
 * `anchor`: what a user would run instead of heapless, case by case — redis-server (persistence off) through
 * ioredis for the key-value cases, a bare fastify route in its own process for the HTTP case. It is the baseline of
 * `pnpm bench server`, so every heapless figure gets its ratio to the anchor of its own case.
 *
 * Without redis-server on PATH the key-value rows are skipped (and the reason printed); the HTTP case still runs.
 */
import type { RunContext } from '../harness/benchmark.js';
import { HTTP_CASE } from './cases.js';
import { findExecutable, REDIS_INSTALL_HINT } from './find-executable.js';
import { freePort } from './free-port.js';
import { measureHttpGet } from './http-load.js';
import { reportCase } from './pipelined-loop.js';
import type { ProcessGroup } from './process-group.js';
import { openRedis, preloadRedis } from './redis-connection.js';
import { runIoredisCases } from './redis-ioredis-cases.js';
import { redisServerCommand } from './redis-server-command.js';
import { reportServerRss } from './server-rss.js';

/** The bare fastify server's script, compiled beside this file. */
const BARE_FASTIFY = new URL('./bare-fastify-server.js', import.meta.url).pathname;
const FASTIFY_READY_TIMEOUT_MS = 20_000;

/** Runs the ioredis cases (when redis-server exists) and the HTTP case against bare fastify. */
export async function runAnchor(ctx: RunContext, group: ProcessGroup): Promise<void> {
  const redisServer = findExecutable('redis-server');
  if (ctx.phases.has('kv') && redisServer === undefined) {
    process.stderr.write(
      `server bench: redis-server is not on PATH, skipping the ioredis rows (${REDIS_INSTALL_HINT})\n`,
    );
  } else if (ctx.phases.has('kv') && redisServer !== undefined) {
    await runRedisCases(ctx, group, redisServer);
  }

  if (!ctx.phases.has('http')) return;
  const port = await freePort();
  const fastify = await group.start({
    name: 'bare fastify',
    file: process.execPath,
    args: [BARE_FASTIFY, String(port)],
    port,
    readyTimeoutMs: FASTIFY_READY_TIMEOUT_MS,
  });
  ctx.progress(HTTP_CASE, 1).finish();
  reportCase(ctx, HTTP_CASE, await measureHttpGet(port, ctx.records));
  await group.stop(fastify);
}

async function runRedisCases(ctx: RunContext, group: ProcessGroup, redisServer: string): Promise<void> {
  const port = await freePort();
  const server = await group.start(redisServerCommand(redisServer, port, ctx.dataDir));
  const redis = await openRedis(port);
  try {
    await preloadRedis(ctx, redis);
    await reportServerRss(ctx, server.pid, 'server after preload');
    await runIoredisCases(ctx, redis);
    await reportServerRss(ctx, server.pid, 'server at the end');
  } finally {
    redis.disconnect();
  }
  await group.stop(server);
}
