/**
 * Catching a map image up with its engine: an image written while the map ran (image-schedule.ts) is of engine
 * sequence S, and the engine went on past it — then the process died, or the image was copied by a checkpoint.
 * Instead of rebuilding the map by a scan of every entry, the open loads the image and replays the engine's writes
 * after S, read back from the WALs the engine retained for it (`Engine.updatesSince`; the map pins them with
 * `retainWalAfter`).
 *
 * The image belongs to this engine's history if the engine's write at S is the image's own: every image is tagged
 * by a put of 16 random bytes under the map's `image` meta key, made just before its memory is captured, so the
 * write at S carries the id the image header holds. A replay therefore reads from S (not S + 1), checks that first
 * write, then applies the data writes after it. Meta writes in the suffix (structures, count, later image ids) are
 * read from the engine itself afterwards, not replayed.
 */
import { type Engine, forEachUpdate, type UpdateBatch } from '@heapless/engine';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { isUtf8Key } from '../key-bytes.js';
import { beginImageLoad, type PendingImage } from '../persist/image.js';
import { native } from '../persist/native.js';
import { IMAGE_KEY, NS_DATA } from '../persist/persistence.js';
import type { MapParts } from './map-open.js';

/**
 * Replays of more writes than this first ready a mapped image for writes: each write to a mapped page copies it on
 * the first write (a page fault per page, 15-150 µs on this project's VM), which for thousands of scattered writes
 * costs more than copying the whole image in bulk (`prepareForWrites`: one madvise per section, a few µs a page) —
 * or, where the kernel cannot, than reading it again with plain reads (a memcpy of it, plus its checksums).
 */
const MAPPED_REPLAY_LIMIT = 256;

/**
 * The image to replay `updates` writes onto: `pending` itself (for a large replay of a mapped image, with its pages
 * made private first), or where that cannot be done, the same file loaded again with plain reads (`pending` is then
 * released). Null when the file no longer reads as the same image.
 */
export function imageForReplay(dir: string, pending: PendingImage, updates: number): PendingImage | null {
  if (pending.loader !== 'mapped' || updates <= MAPPED_REPLAY_LIMIT || native === null) return pending;
  if (pending.prepareForWrites()) return pending;
  pending.drop();
  const again = beginImageLoad(dir, { ...native, loadSections: null });
  if (typeof again === 'string') return null;
  if (again.sequence !== pending.sequence || !Buffer.from(again.id).equals(pending.id)) {
    again.drop();
    return null;
  }
  return again;
}

/** How a reason starts when the engine no longer has the writes after the image (it deleted or lost the logs). */
export const LOGS_GONE = "cannot replay the engine's writes after the image";

/** The writes to replay onto an image: the engine's batches holding the writes after `sequence`. */
export interface ReplaySuffix {
  readonly sequence: number;
  readonly batches: readonly UpdateBatch[];
  /** Writes after `sequence` (data and meta). */
  readonly updates: number;
}

/**
 * The engine's writes after the image of `sequence` whose id is `id`, or why there are none to replay onto it: the
 * engine is behind the image, no longer has the logs, or its write at `sequence` is not this image's tag.
 */
export async function replaySuffix(
  engine: Engine,
  image: { id: Uint8Array; sequence: number },
): Promise<ReplaySuffix | string> {
  const last = engine.stats().lastSequence;
  if (image.sequence > last) return `image is of sequence ${image.sequence}, the engine only reaches ${last}`;
  const since = await engine.updatesSince(image.sequence - 1);
  if (!since.ok) return `${LOGS_GONE}: ${since.reason}`;
  let tagged = false;
  let checked = false;
  forEachUpdate(since.batches.slice(0, 1), image.sequence - 1, (seq, key, value) => {
    if (checked) return;
    checked = true;
    tagged =
      seq === image.sequence &&
      value !== undefined &&
      Buffer.from(key).equals(IMAGE_KEY) &&
      Buffer.from(value).equals(image.id);
  });
  if (!tagged) return `the engine's write at sequence ${image.sequence} is not this image's tag`;
  return { sequence: image.sequence, batches: since.batches, updates: since.updates - 1 };
}

/**
 * Applies the data writes of `suffix` to the parts just restored from its image, in commit order; returns how many.
 * Nothing is persisted (the engine has them). Throws INCOMPATIBLE for a key or value the map cannot hold (as a scan
 * would), or the engine's CorruptionError.
 */
export function applySuffix(parts: MapParts, suffix: ReplaySuffix): number {
  const { index, store, keysAreStrings, codec } = parts;
  let applied = 0;
  forEachUpdate(suffix.batches, suffix.sequence, (_seq, engineKey, value) => {
    if (engineKey.length === 0 || engineKey[0] !== NS_DATA) return;
    const bytes = engineKey.subarray(1);
    if (keysAreStrings && !isUtf8Key(engineKey, 1, bytes.length)) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `the engine's WAL holds key 0x${Buffer.from(bytes.subarray(0, 64)).toString('hex')} which is not UTF-8`,
      );
    }
    const key = keysAreStrings ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8') : bytes;
    applied++;
    if (value === undefined) {
      const slot = index.find(key);
      if (slot >= 0) store.remove(slot);
      return;
    }
    if (codec.structType !== null && value.length !== codec.structType.size) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `stored struct value of ${value.length} bytes, the layout is ${codec.structType.size} bytes`,
      );
    }
    store.put(key, value, value.length);
  });
  return applied;
}
