/**
 * The key-value cases against redis-server through ioredis, the client a Node user would pick: one connection,
 * `getBuffer`/`set` of 100-byte values, a batch of `depth` commands as one `pipeline().exec()` (a plain awaited
 * command at depth 1), measured with the same loop as heapless's typed client.
 */
import type { Redis } from 'ioredis';
import type { RunContext } from '../harness/benchmark.js';
import { DEPTHS, hundredByteValue, kvCaseName } from './cases.js';
import { KeyPool } from './key-pool.js';
import { type BatchRunner, measureBatches, reportCase } from './pipelined-loop.js';
import { execOrThrow } from './redis-connection.js';

/** Runs `get` and `set` at every depth over `redis` (connected to a preloaded redis-server). */
export async function runIoredisCases(ctx: RunContext, redis: Redis): Promise<void> {
  const keys = new KeyPool(ctx.records);
  const value = hundredByteValue();
  const get: BatchRunner = async (depth) => {
    if (depth === 1) {
      if ((await redis.getBuffer(keys.next())) === null) throw new Error('redis: a preloaded key was not found');
      return;
    }
    const pipeline = redis.pipeline();
    for (let i = 0; i < depth; i++) pipeline.getBuffer(keys.next());
    for (const [error, found] of (await pipeline.exec()) ?? []) {
      if (error !== null) throw error;
      if (found === null) throw new Error('redis: a preloaded key was not found');
    }
  };
  const set: BatchRunner = async (depth) => {
    if (depth === 1) {
      await redis.set(keys.next(), value);
      return;
    }
    const pipeline = redis.pipeline();
    for (let i = 0; i < depth; i++) pipeline.set(keys.next(), value);
    await execOrThrow(pipeline.exec());
  };
  for (const [operation, runBatch] of [
    ['get', get],
    ['set', set],
  ] as const) {
    for (const depth of DEPTHS) {
      const label = kvCaseName(operation, depth);
      ctx.progress(label, 1).finish();
      reportCase(ctx, label, await measureBatches(runBatch, depth));
    }
  }
}
