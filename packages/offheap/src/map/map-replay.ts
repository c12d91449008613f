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
import { bytesEqual, hashBytes, isUtf8Key } from '../key-bytes.js';
import { LOC_EMPTY, LOC_TOMBSTONE, locOffset, locSegment, recordBytes } from '../memory/arena.js';
import { native } from '../persist/native.js';
import { IMAGE_KEY, META_KEY, NS_DATA, STRUCTURES_KEY } from '../persist/persistence.js';
import type { MapParts } from './map-open.js';

/**
 * Replays of more writes than this first make the pages they will write private in bulk: each write to a page of a
 * mapped image copies the page on the first write (a page fault per page, 15-150 µs on this project's VM), which for
 * thousands of scattered writes costs more than copying those pages in one madvise per run of them (a few µs a
 * page). Fewer writes fault their pages one by one.
 */
const MAPPED_REPLAY_LIMIT = 256;
/**
 * The granule of the pages marked for copying: 4 KiB, the page of x86-64 and of most arm64 kernels (a larger page is
 * rounded out to whole pages by the helper, so it is still covered).
 */
const PAGE_BYTES = 4096;

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
  readonly values: (Uint8Array | undefined)[];
  /** The msgpackr structures the suffix stored last (undefined: it stored none, the image's hold). */
  readonly structures: Structures | undefined;
  /** True if the suffix wrote the map's `meta` key or deleted its structures: the engine must be read instead. */
  readonly metaChanged: boolean;
}

/** What `applySuffix` did. */
export interface SuffixApplied {
  /** Data writes applied. */
  readonly writes: number;
  /** Pages of the mapped image made private in bulk before them (0: none were). */
  readonly pages: number;
}

/**
 * Applies the data writes of a suffix (`decodeSuffix`) to the parts just restored from its image, in commit order. On a `mapped`
 * image, more than MAPPED_REPLAY_LIMIT writes first have the pages they will write made private in bulk — only
 * those pages: the index slots and the records of their keys, not the whole image. Nothing is persisted (the engine
 * has them). Throws INCOMPATIBLE for a key or value the map cannot hold (as a scan would), or the engine's
 * CorruptionError.
 */
export function applySuffix(parts: MapParts, writes: SuffixWrites, mapped: boolean): SuffixApplied {
  const { keys, values } = writes;
  const pages = mapped && keys.length > MAPPED_REPLAY_LIMIT ? populateTouched(parts, keys, values) : 0;
  const store = parts.store;
  for (let i = 0; i < keys.length; i++) store.replay(keys[i]!, values[i]);
  return { writes: keys.length, pages };
}

/**
 * The writes of `suffix` for a map of string keys or not, and of values of `structSize` bytes (null: any): its data
 * writes, checked as a scan checks what it loads (a string map's keys are UTF-8, a struct map's values the layout's
 * size), and what it did to the meta keys the open reads. Throws INCOMPATIBLE, or the engine's CorruptionError.
 */
export function decodeSuffix(suffix: ReplaySuffix, keysAreStrings: boolean, structSize: number | null): SuffixWrites {
  const keys: Uint8Array[] = [];
  const values: (Uint8Array | undefined)[] = [];
  let structures: Structures | undefined;
  let metaChanged = false;
  forEachUpdate(suffix.batches, suffix.sequence, (_seq, engineKey, value) => {
    if (engineKey.length === 0 || engineKey[0] !== NS_DATA) {
      if (isKey(engineKey, META_KEY)) metaChanged = true;
      else if (isKey(engineKey, STRUCTURES_KEY)) {
        if (value === undefined) metaChanged = true;
        else structures = unpack(value) as Structures;
      }
      return;
    }
    if (keysAreStrings && !isUtf8Key(engineKey, 1, engineKey.length - 1)) {
      const head = Buffer.from(engineKey.subarray(1, 65)).toString('hex');
      throw new OffHeapError(OffHeapErrorCodes.INCOMPATIBLE, `the engine's WAL holds key 0x${head} which is not UTF-8`);
    }
    if (value !== undefined && structSize !== null && value.length !== structSize) {
      throw new OffHeapError(
        OffHeapErrorCodes.INCOMPATIBLE,
        `stored struct value of ${value.length} bytes, the layout is ${structSize} bytes`,
      );
    }
    keys.push(engineKey);
    values.push(value);
  });
  return { keys, values, structures, metaChanged };
}

function isKey(engineKey: Uint8Array, key: Uint8Array): boolean {
  return engineKey.length === key.length && bytesEqual(engineKey, 0, key, 0, key.length);
}

/**
 * Makes private in bulk the pages of the restored image that the writes of `keys` will write: the whole index table
 * (probes and inserts land anywhere in it; it is a small part of the image), then each key's record, as long as its
 * new value. The records are found from the table alone (a slot with the key's hash), without reading the arena:
 * a page read first through the mapping would then need its mapping torn down again to be made private, which
 * costs more than the fault it saves. A slot of another key with the same hash only adds a page; what is not
 * foreseen (a block taken from a free list or the arena's end) faults as before. Returns the pages populated; 0
 * without the native helper or where the kernel cannot.
 */
function populateTouched(
  parts: MapParts,
  keys: readonly Uint8Array[],
  values: readonly (Uint8Array | undefined)[],
): number {
  if (native === null || native.populate === null) return 0;
  const { index, arena } = parts;
  const table = index.table;
  if (!native.populate([new Uint8Array(table.sab)])) return 0;
  const marks = arena.buffers.map((b) => new Uint8Array(Math.ceil(b.byteLength / PAGE_BYTES)));
  const { slots, hashes, mask } = table;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const h = hashBytes(key, 1, key.length - 1);
    const bytes = recordBytes(key.length - 1, values[k]?.length ?? 0);
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const loc = slots[i * 2 + 1]!;
      if (loc === LOC_EMPTY) break;
      if (loc === LOC_TOMBSTONE || hashes[i * 2] !== h) continue;
      const m = marks[locSegment(loc)];
      if (m === undefined) continue;
      const off = locOffset(loc);
      for (let p = Math.floor(off / PAGE_BYTES), last = Math.floor((off + bytes - 1) / PAGE_BYTES); p <= last; p++) {
        if (p < m.length) m[p] = 1;
      }
    }
  }
  const ranges: Uint8Array[] = [];
  let pages = Math.ceil(table.sab.byteLength / PAGE_BYTES);
  for (const [seg, m] of marks.entries()) {
    const buf = arena.buffers[seg]!;
    for (let p = 0; p < m.length; p++) {
      if (m[p] === 0) continue;
      const first = p;
      while (p < m.length && m[p] === 1) p++;
      pages += p - first;
      const start = first * PAGE_BYTES;
      ranges.push(new Uint8Array(buf, start, Math.min(buf.byteLength, p * PAGE_BYTES) - start));
    }
  }
  return native.populate(ranges) ? pages : 0;
}
