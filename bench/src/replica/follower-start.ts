/**
 * The `start` phase of the `follower` system (each way a follower can start), all in one process and one
 * nats-server so that every ratio is of one run:
 *
 * - data (not timed): a stream of 0.99 N messages of ~500 B; a follower replays it and publishes its checkpoint;
 *   then the last 1% of the stream;
 * - `start: full replay`: a fresh follower without checkpoints, from the stream's first message to N;
 * - `start: checkpoint + last 1%`: a fresh follower that downloads the checkpoint, opens it by its map image and
 *   replays the tail;
 * - `start: restart, local data + small lag`: the first of those restarted after 0.1% more messages (at least 10);
 * - floors: the checkpoint's download alone (`CheckpointStore.download`), the same N messages consumed with an empty
 *   handler (`consumeChanges`), and the local map image load (an `OffHeapMap.open` of the restarted directory);
 * - the goals as ratio rows: apply rate ÷ empty-handler consume rate (≥ 0.5), checkpoint start ÷ (download
 *   + tail replay at the full replay's rate) (≤ 1.5), restart ÷ local image load (≤ 2), full replay ÷ checkpoint
 *   start (≥ 10 at 1M).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MAP_IMAGE_FILE, OffHeapMap } from '@heapless/offheap';
import { CheckpointStore, consumeChanges, Follower } from '@heapless/replica';
import type { NatsConnection } from '@nats-io/nats-core';
import type { RunContext } from '../harness/benchmark.js';
import { BUCKET, fillStream, SCHEMA, STREAM } from './fixtures.js';

export const FULL_REPLAY_CASE = 'start: full replay';
export const CHECKPOINT_CASE = 'start: checkpoint + last 1%';
export const RESTART_CASE = 'start: restart, local data + small lag';
export const DOWNLOAD_FLOOR_CASE = 'floor: checkpoint download';
export const CONSUME_FLOOR_CASE = 'floor: consume, empty handler';
export const IMAGE_FLOOR_CASE = 'floor: local image load';

/** Messages per pull and per applied batch, for the followers and the empty-handler reader alike. */
const BATCH_MESSAGES = 1000;

export async function followerStartPhase(ctx: RunContext, nc: NatsConnection): Promise<void> {
  const n = ctx.records;
  const head = Math.max(1, Math.floor(n * 0.99));
  const lag = Math.max(10, Math.floor(n * 0.001));
  await fillStream(ctx, nc, 1, head);
  const checkpoints = await CheckpointStore.open(nc, { bucket: BUCKET });
  const open = (dir: string, store?: CheckpointStore) =>
    Follower.open({
      nc,
      dir: join(ctx.dataDir, dir),
      stream: STREAM,
      schema: SCHEMA,
      maxBatchMessages: BATCH_MESSAGES,
      maxReplay: lag * 2,
      ...(store === undefined ? {} : { checkpoints: store }),
    });
  const source = await open('source', checkpoints);
  await source.waitCaughtUp();
  const published = await source.publishCheckpoint();
  await source.close();
  await fillStream(ctx, nc, head + 1, n);

  const replay = await timed(ctx, FULL_REPLAY_CASE, n, async () => {
    const f = await open('replayed');
    await f.waitCaughtUp();
    return f;
  });
  const replayRate = n / replay.seconds;
  ctx.record({ case: FULL_REPLAY_CASE, metric: 'apply rate', value: replayRate, unit: 'msgs/s', better: 'higher' });
  // Each start runs alone, as on a replica's host: the replayed follower's compactions stop before the next one.
  await replay.value.close();

  const fromCheckpoint = await timed(ctx, CHECKPOINT_CASE, n - head, async () => {
    const f = await open('from-checkpoint', checkpoints);
    await f.waitCaughtUp();
    return f;
  });
  if (fromCheckpoint.value.start.kind !== 'checkpoint' || fromCheckpoint.value.start.mapSource !== 'image')
    throw new Error(
      `the checkpoint start did not load the checkpoint by its image: ${JSON.stringify(fromCheckpoint.value.start)}`,
    );
  await fromCheckpoint.value.close();

  await fillStream(ctx, nc, n + 1, n + lag);
  const restart = await timed(ctx, RESTART_CASE, lag, async () => {
    const f = await open('replayed', checkpoints);
    await f.waitCaughtUp();
    return f;
  });
  if (restart.value.start.kind !== 'resume') throw new Error(`the restart did not resume: ${restart.value.start.kind}`);
  await restart.value.close();

  // Floors.
  const image = await timed(ctx, IMAGE_FLOOR_CASE, n, async () =>
    OffHeapMap.open({ dir: join(ctx.dataDir, 'replayed') }),
  );
  if (image.value.openStats.source !== 'image') throw new Error('the local data did not open from its image');
  await image.value.close();
  const downloadDir = join(ctx.dataDir, 'download-floor');
  // The same download as the follower's: the map image checked as it is written, around the page cache.
  const download = await timed(ctx, DOWNLOAD_FLOOR_CASE, published.manifest.totalBytes, () =>
    checkpoints.download(published.manifest, downloadDir, { mapImage: MAP_IMAGE_FILE }),
  );
  await rm(downloadDir, { recursive: true });
  const consume = await timed(ctx, CONSUME_FLOOR_CASE, n, () => consumeTo(nc, n));

  const ratio = (name: string, value: number, better: 'higher' | 'lower') =>
    ctx.record({ case: `goal: ${name}`, metric: 'ratio', value, unit: '×', better });
  ratio('apply rate ÷ empty-handler consume (≥ 0.5)', replayRate / (n / consume.seconds), 'higher');
  const tailReplay = (n - head) / replayRate;
  ratio(
    'checkpoint start ÷ (download + tail replay) (≤ 1.5)',
    fromCheckpoint.seconds / (download.seconds + tailReplay),
    'lower',
  );
  ratio('restart ÷ local image load (≤ 2)', restart.seconds / image.seconds, 'lower');
  ratio('full replay ÷ checkpoint start (≥ 10 at 1M)', replay.seconds / fromCheckpoint.seconds, 'higher');
}

/** Runs `f`, records its time in ms under `name`, returns its value and seconds. */
async function timed<T>(
  ctx: RunContext,
  name: string,
  units: number,
  f: () => Promise<T>,
): Promise<{ value: T; seconds: number }> {
  const ticker = ctx.progress(name, units);
  const started = performance.now();
  const value = await f();
  const ms = performance.now() - started;
  ticker.finish();
  ctx.record({ case: name, metric: 'time', value: ms, unit: 'ms', better: 'lower' });
  return { value, seconds: ms / 1000 };
}

/** Reads messages 1..`last` with a handler that does nothing. */
async function consumeTo(nc: NatsConnection, last: number): Promise<void> {
  let reached!: () => void;
  const done = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const reader = await consumeChanges(nc, {
    stream: STREAM,
    after: 0,
    maxBatchMessages: BATCH_MESSAGES,
    handler: (batch) => {
      if (batch.lastSeq >= last) reached();
    },
  });
  await Promise.race([done, reader.done]);
  await reader.close();
}
