/**
 * A live checkpoint of a persisted map: a consistent copy of its directory, taken while writes go on, that opens
 * elsewhere as the map without a scan. The copy is the engine's checkpoint (tables and retained WALs hard-linked,
 * live WALs copied, a fresh manifest) plus the map's newest image, hard-linked too: an image file is never changed
 * once renamed into place. The image is of an engine sequence S at or before the checkpoint's, and the copy's WALs
 * hold every write after S (the map pins them, image-schedule.ts), so opening the copy loads the image and replays
 * the writes between S and the checkpoint (map-replay.ts).
 *
 * The writer pauses only for the engine checkpoint's synchronous part (links, WAL copies, manifest write); a map
 * with no image on disk yet (it was rebuilt by a scan at open and has written none since) first writes one, which
 * holds the writer for the image's capture.
 */
import { join, resolve } from 'node:path';
import { linkOrCopy, pathWithin } from '@heapless/engine';
import { invalidArgument } from '../errors.js';
import { IMAGE_FILE } from '../persist/image.js';
import type { ImageSchedule } from '../persist/image-schedule.js';
import type { MapPersistence } from '../persist/persistence.js';

/** What `map.checkpoint(dir)` reports. */
export interface MapCheckpoint {
  /** The checkpoint's directory (resolved). */
  readonly dir: string;
  /** The engine sequence of the image in the copy (-1: none, the copy opens by a scan). */
  readonly imageSequence: number;
  /** Milliseconds of the whole checkpoint, and of the engine's part (which holds the writer). */
  readonly ms: number;
  readonly engineMs: number;
}

/**
 * Writes the checkpoint of the map persisted in `source` to `dir` (see the top of the file). Throws INVALID_ARGUMENT
 * for a `dir` that is not a string or lies inside `source` (as real paths: through a symbolic link too); rejects with the engine's INVALID_ARGUMENT for a
 * directory that exists and is not empty, its CLOSED or IO.
 */
export async function checkpointMap(
  dir: string,
  source: string,
  persistence: MapPersistence,
  images: ImageSchedule | null,
): Promise<MapCheckpoint> {
  if (typeof dir !== 'string' || dir.length === 0) throw invalidArgument('checkpoint(dir) needs a directory');
  const target = resolve(dir);
  // Real paths, not path text: a target reached through a symbolic link into the map's directory is inside it.
  if (pathWithin(source, target)) {
    throw invalidArgument(`checkpoint directory ${target} lies inside the map's directory ${source}`);
  }
  const started = performance.now();
  await images?.hold();
  try {
    if (images !== null && images.imageSequence < 0) await images.writeNow();
    const imageSequence = images === null ? -1 : images.imageSequence;
    const engineStarted = performance.now();
    await persistence.checkpoint(target);
    const engineMs = performance.now() - engineStarted;
    if (imageSequence >= 0) linkOrCopy(join(source, IMAGE_FILE), join(target, IMAGE_FILE));
    return { dir: target, imageSequence, ms: performance.now() - started, engineMs };
  } finally {
    images?.release();
  }
}
