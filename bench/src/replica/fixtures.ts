/**
 * The data both systems read, made before anything is timed: a change stream of N messages of ~500 bytes (one set
 * each: a key and a 480-byte value), published many at a time; and a checkpoint of N × 500 bytes of incompressible
 * files (at most 64 MiB each, as an engine's tables) uploaded to a bucket.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ChangePublisher,
  type CheckpointManifest,
  CheckpointStore,
  ensureChangeStream,
  setChange,
} from '@heapless/replica';
import type { NatsConnection } from '@nats-io/nats-core';
import type { RunContext } from '../harness/benchmark.js';

export const STREAM = 'bench';
export const BUCKET = 'bench-checkpoints';
export const SCHEMA = 'bench-v1';
/** A message's value: with its key and msgpack framing, a message payload of about 500 bytes. */
const VALUE_BYTES = 480;
/** The bytes of checkpoint per record. */
export const CHECKPOINT_BYTES_PER_RECORD = 500;
const MAX_FILE_BYTES = 64 * 1024 * 1024;
/** Publishes in flight while filling the stream: enough to keep JetStream busy, bounded to bound memory. */
const PUBLISH_WINDOW = 512;

/**
 * Publishes messages `from`..`to` (default 1..N: a new stream) of key `key<i>` each; returns the stream's last
 * sequence (= `to`).
 */
export async function fillStream(ctx: RunContext, nc: NatsConnection, from = 1, to = ctx.records): Promise<number> {
  await ensureChangeStream(nc, { name: STREAM });
  const publisher = new ChangePublisher(nc, { stream: STREAM, schema: SCHEMA, timeoutMs: 30_000 });
  const value = Buffer.alloc(VALUE_BYTES, 'v');
  const ticker = ctx.progress('fill stream', to - from + 1);
  const inFlight = new Set<Promise<unknown>>();
  for (let i = from; i <= to; i++) {
    value.writeUInt32BE(i, 0); // values differ, as real ones do
    const p = publisher.publish([setChange(`key${i}`, Uint8Array.from(value))], { msgId: `fill-${i}` });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= PUBLISH_WINDOW) await Promise.race(inFlight);
    ticker.update(i - from + 1);
  }
  await Promise.all(inFlight);
  ticker.finish();
  return to;
}

/** Writes a checkpoint directory of N × 500 bytes and uploads it; returns its manifest. */
export async function uploadCheckpoint(
  ctx: RunContext,
  nc: NatsConnection,
): Promise<{ store: CheckpointStore; manifest: CheckpointManifest }> {
  const dir = join(ctx.dataDir, 'checkpoint-source');
  await mkdir(join(dir, 'tables'), { recursive: true });
  let left = ctx.records * CHECKPOINT_BYTES_PER_RECORD;
  for (let n = 1; left > 0; n++) {
    const size = Math.min(left, MAX_FILE_BYTES);
    await writeFile(join(dir, 'tables', `${String(n).padStart(6, '0')}.sst`), randomBytes(size));
    left -= size;
  }
  const ticker = ctx.progress('upload checkpoint', 1);
  const store = await CheckpointStore.open(nc, { bucket: BUCKET });
  const manifest = await store.upload(dir, { schema: SCHEMA, position: ctx.records, stream: STREAM });
  ticker.finish();
  return { store, manifest };
}
