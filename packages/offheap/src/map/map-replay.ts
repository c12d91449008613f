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
 * write, then applies the data writes after it. Of the meta writes in the suffix, the last `structures` replaces the
 * image's (msgpackr structures added since), a write of `meta` sends the open to the engine's keys, and the rest
 * (count, later image ids) do not matter to an image open: the open reads no engine key.
 */
import { type Engine, forEachUpdate, type UpdateBatch } from '@heapless/engine';
import { unpack } from 'msgpackr';
import type { Structures } from '../codec/msgpack-codec.js';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { bytesEqual, isUtf8Key } from '../key-bytes.js';
import { MAX_RECORD_BYTES, NO_EXPIRY, recordBytes } from '../memory/arena.js';
import { IMAGE_KEY, META_KEY, NS_DATA, STRUCTURES_KEY } from '../persist/persistence.js';
import { StoredValue } from '../persist/stored-value.js';
import { MAX_KEY_BYTES } from './map-options.js';

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
 * The data writes of a suffix, in commit order: each key as the engine holds it (the namespace byte, then the key)
 * and its value (undefined: a delete), views of the suffix's batches.
 */
export interface SuffixWrites {
  readonly keys: Uint8Array[];
  /** The value bytes (without the stored header), undefined for a delete. */
  readonly values: (Uint8Array | undefined)[];
  /** Each write's version (a format-1 value's: the sequence of its write) and expiry (NO_EXPIRY: none). */
  readonly versions: number[];
  readonly expiries: number[];
  /** The msgpackr structures the suffix stored last (undefined: it stored none, the image's hold). */
  readonly structures: Structures | undefined;
  /** True if the suffix wrote the map's `meta` key or deleted its structures: the engine must be read instead. */
  readonly metaChanged: boolean;
}

/**
 * The writes of `suffix` for a map of string keys or not, and of values of `structSize` bytes (null: any): its data
 * writes, checked as a scan checks what it loads (a string map's keys are UTF-8, a struct map's values the layout's
 * size), and what it did to the meta keys the open reads. Throws INCOMPATIBLE, or the engine's CorruptionError.
 */
export function decodeSuffix(suffix: ReplaySuffix, keysAreStrings: boolean, structSize: number | null): SuffixWrites {
  const keys: Uint8Array[] = [];
  const values: (Uint8Array | undefined)[] = [];
  const versions: number[] = [];
  const expiries: number[] = [];
  const stored = new StoredValue(structSize);
  let structures: Structures | undefined;
  let metaChanged = false;
  forEachUpdate(suffix.batches, suffix.sequence, (seq, engineKey, raw) => {
    if (engineKey.length === 0 || engineKey[0] !== NS_DATA) {
      if (isKey(engineKey, META_KEY)) metaChanged = true;
      else if (isKey(engineKey, STRUCTURES_KEY)) {
        if (raw === undefined) metaChanged = true;
        else structures = unpack(raw) as Structures;
      }
      return;
    }
    let value: Uint8Array | undefined;
    if (raw !== undefined) {
      const n = stored.read(raw, 0, raw.length, seq);
      value = raw.subarray(stored.start, stored.start + n);
    }
    if (keysAreStrings && !isUtf8Key(engineKey, 1, engineKey.length - 1)) {
      const head = Buffer.from(engineKey.subarray(1, 65)).toString('hex');
      throw new OffHeapError(OffHeapErrorCodes.INCOMPATIBLE, `the engine's WAL holds key 0x${head} which is not UTF-8`);
    }
    // Checked here, as the map's own writes are, so that applying it later (pending-suffix.ts) cannot fail on it.
    if (
      engineKey.length - 1 > MAX_KEY_BYTES ||
      recordBytes(engineKey.length - 1, value?.length ?? 0, value !== undefined && stored.expiresAt !== NO_EXPIRY) >
        MAX_RECORD_BYTES
    ) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `the engine's WAL holds a record of a ${engineKey.length - 1}-byte key and a ${value?.length ?? 0}-byte value, more than the map holds`,
      );
    }
    if (value !== undefined && structSize !== null && value.length !== structSize) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `stored struct value of ${value.length} bytes, the layout is ${structSize} bytes`,
      );
    }
    keys.push(engineKey);
    values.push(value);
    versions.push(value === undefined ? 0 : stored.version);
    expiries.push(value === undefined ? NO_EXPIRY : stored.expiresAt);
  });
  return { keys, values, versions, expiries, structures, metaChanged };
}

function isKey(engineKey: Uint8Array, key: Uint8Array): boolean {
  return engineKey.length === key.length && bytesEqual(engineKey, 0, key, 0, key.length);
}
