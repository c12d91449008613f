/**
 * Publishing a follower's map as a checkpoint: a live checkpoint of the map (engine checkpoint and map image, while
 * writes go on) in a directory beside the data, uploaded to the object store with the position, schema id and
 * stream read from the checkpoint's own metadata, then the older checkpoints of the schema and stream pruned to `keep`.
 */
import { rm } from 'node:fs/promises';
import type { OffHeapMap } from '@heapless/offheap';
import type { CheckpointManifest } from '../checkpoint/checkpoint-manifest.js';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.js';
import { ReplicaError } from '../errors.js';
import { readFollowerState } from './follower-meta.js';
import { siblingDir } from './local-data.js';

/** Checkpoints kept per schema by default. */
export const DEFAULT_KEEP_CHECKPOINTS = 3;

/** Options of {@link publishMapCheckpoint}. */
export interface PublishCheckpointOptions {
  /** The map's data directory: the checkpoint is made beside it. */
  readonly dir: string;
  /** The newest checkpoints of the schema kept; default 3. */
  readonly keep?: number;
  /**
   * Runs `take` at a moment when no batch is being applied, so that the metadata read right after the checkpoint is
   * the checkpoint's (a running follower passes its apply lock; a map nothing else writes needs none).
   */
  readonly exclusive?: <T>(take: () => Promise<T>) => Promise<T>;
}

/** What {@link publishMapCheckpoint} did. */
export interface PublishedCheckpoint {
  readonly manifest: CheckpointManifest;
  /** Ids of the older checkpoints removed. */
  readonly pruned: string[];
  /** Milliseconds of the local checkpoint, and of the upload. */
  readonly checkpointMs: number;
  readonly uploadMs: number;
}

/**
 * Checkpoints `map` (a follower's: it must hold the follower metadata) and uploads it. Throws INVALID_ARGUMENT (not
 * a follower's map: no position or schema), the map's checkpoint errors, and the store's (UNAVAILABLE...). The
 * local copy is removed in every case.
 */
export async function publishMapCheckpoint(
  map: OffHeapMap<string, unknown>,
  store: CheckpointStore,
  options: PublishCheckpointOptions,
): Promise<PublishedCheckpoint> {
  const keep = options.keep ?? DEFAULT_KEEP_CHECKPOINTS;
  if (!Number.isSafeInteger(keep) || keep < 1)
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `keep must be a positive integer, got ${keep}`);
  const copy = siblingDir(options.dir, '.checkpoint-');
  const exclusive = options.exclusive ?? ((take) => take());
  try {
    const started = performance.now();
    // A fresh image first, so that the copy's image is of (nearly) its own state: a follower that loads the
    // checkpoint then replays next to nothing onto it, instead of every write since the map's last periodic image.
    await map.writeImage();
    const state = await exclusive(async () => {
      await map.checkpoint(copy);
      return readFollowerState(map);
    });
    const checkpointMs = performance.now() - started;
    if (state.position === undefined || state.schema === undefined)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `${options.dir} holds no follower position and schema`,
      );
    const uploading = performance.now();
    const manifest = await store.upload(copy, {
      schema: state.schema,
      position: state.position,
      ...(state.stream === undefined ? {} : { stream: state.stream }),
    });
    const uploadMs = performance.now() - uploading;
    const pruned = await store.prune(state.schema, keep, state.stream === undefined ? {} : { stream: state.stream });
    return { manifest, pruned, checkpointMs, uploadMs };
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}
