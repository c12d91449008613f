import type { Engine } from '@heapless/engine';
import { pack, unpack } from 'msgpackr';
import type { Structures } from '../codec/msgpack-codec.js';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { NS_META } from './namespaces.js';

/**
 * How a map lives in its engine directory. Engine keys carry a one-byte namespace so the map's own metadata can
 * never collide with a user key:
 *
 *   0x00 "meta"        msgpack { format: 2, keys: 'string'|'bytes', codec: 'msgpack'|'struct', struct: signature }
 *   0x00 "structures"  msgpack array of msgpackr structures (arrays of field names), in id order
 *   0x00 "sync"        empty; written with sync by `flush()` to force an fdatasync of everything before it
 *   0x00 "count"       u32 LE: entries at the last clean close; sizes the index at the next open (a hint only)
 *   0x00 "image"       16 random bytes written at each clean close, also in the header of the map image written
 *                      then (image.ts): an image is the engine's current state only if both ids match
 *   0x01 <key bytes>   the key's version and expiry, then the value bytes exactly as they are in the arena
 *                      (msgpack or struct layout): stored-value.ts
 *   0x02 <name utf-8>  a named metadata value (`map.meta`), as the user gave it; after every key, so the data
 *                      range [0x01, 0x02) that loads, ranges and counts read never meets one
 *
 * A value that introduced a new structure is written in the same atomic engine batch as the new structure table,
 * so no crash can leave a value whose structure was not persisted.
 */
export const FORMAT_VERSION = 2;
/** The format of directories written before values carried their version and expiry: opened, and upgraded. */
export const FORMAT_VERSION_1 = 1;
export const META_KEY = metaKey('meta');
export const STRUCTURES_KEY = metaKey('structures');
export const SYNC_KEY = metaKey('sync');
export const COUNT_KEY = metaKey('count');
export const IMAGE_KEY = metaKey('image');

function metaKey(name: string): Uint8Array {
  const b = Buffer.from(`\0${name}`, 'latin1');
  b[0] = NS_META;
  return b;
}

/** What the "meta" key holds. */
export interface MapMeta {
  format: number;
  keys: 'string' | 'bytes';
  codec: 'msgpack' | 'struct';
  struct: string | null;
}

/** What `prepareDirectory` reads back. */
export interface DirectoryState {
  structures: Structures;
  /** Entries at the last clean close (0 if unknown): the index is sized for it before loading. */
  countHint: number;
}

/** Reads the map's metadata and structures; writes the metadata if the directory is new. Throws INCOMPATIBLE. */
export async function prepareDirectory(engine: Engine, want: MapMeta): Promise<DirectoryState> {
  const raw = engine.getSync(META_KEY);
  if (raw === undefined) {
    await engine.put(META_KEY, pack(want), { sync: true });
    return { structures: [], countHint: 0 };
  }
  const have = unpack(raw) as MapMeta;
  checkMeta(engine, have, want);
  // Format-1 values open as they are (stored-value.ts tells them apart); the meta says format 2 before any format-2
  // value is written, so that format-1 code refuses the directory instead of misreading one.
  if (have.format === FORMAT_VERSION_1) await engine.put(META_KEY, pack(want), { sync: true });
  const s = engine.getSync(STRUCTURES_KEY);
  const c = engine.getSync(COUNT_KEY);
  return {
    structures: s === undefined ? [] : (unpack(s) as Structures),
    countHint: c !== undefined && c.length === 4 ? new DataView(c.buffer, c.byteOffset, 4).getUint32(0, true) : 0,
  };
}

/** Throws INCOMPATIBLE unless a map of `have` can be opened as `want` (a format-1 map can: it is upgraded). */
function checkMeta(engine: Engine, have: MapMeta, want: MapMeta): void {
  if (
    (have.format !== want.format && have.format !== FORMAT_VERSION_1) ||
    have.keys !== want.keys ||
    have.codec !== want.codec ||
    (have.struct ?? null) !== want.struct
  ) {
    throw new OffHeapError(
      OffHeapErrorCodes.INCOMPATIBLE,
      `${engine.location} holds a map of ${JSON.stringify(have)}, opened as ${JSON.stringify(want)}`,
    );
  }
}

/** The metadata a map image carries: what `prepareDirectory` would read from the engine's meta keys. */
export function packImageMeta(meta: MapMeta, structures: Structures): Uint8Array {
  return pack({ meta, structures });
}

/**
 * The directory state from a map image's metadata if the image is of the engine's current state — its id is the
 * engine's `image` value and its sequence the engine's last — or why it is not. The one place that decides whether
 * an image belongs to the engine; it reads one key, which the last close wrote (still in the memtable), instead of
 * every meta key. Throws INCOMPATIBLE.
 */
export function directoryFromImage(
  engine: Engine,
  want: MapMeta,
  image: { id: Uint8Array; sequence: number; meta: Uint8Array },
): DirectoryState | string {
  // The sequence first: an image that is not current (a crash) is told without a read of the engine, whose first
  // read after a replay indexes its whole memtable.
  const sequence = engine.stats().lastSequence;
  if (sequence !== image.sequence) return `image is of sequence ${image.sequence}, the engine is at ${sequence}`;
  const id = engine.getSync(IMAGE_KEY);
  if (id === undefined || !Buffer.from(id).equals(image.id)) return 'image id differs from the engine';
  return imageDirectoryState(engine, want, image.meta);
}

/**
 * The directory state a map image's metadata records (the engine's meta keys as of the image), or why it does not
 * decode. Throws INCOMPATIBLE when the map it records cannot be opened as `want`.
 */
export function imageDirectoryState(engine: Engine, want: MapMeta, imageMeta: Uint8Array): DirectoryState | string {
  let stored: { meta: MapMeta; structures: Structures };
  try {
    stored = unpack(imageMeta) as { meta: MapMeta; structures: Structures };
  } catch {
    return 'image metadata does not decode'; // cannot be with a good header checksum
  }
  // Nor can this, unless the file was written by something else with a checksum of its own.
  if (typeof stored?.meta !== 'object' || stored.meta === null || !Array.isArray(stored.structures)) {
    return 'image metadata is not a map meta';
  }
  checkMeta(engine, stored.meta, want);
  return { structures: stored.structures, countHint: 0 };
}
