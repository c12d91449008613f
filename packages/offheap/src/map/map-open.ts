/**
 * The opener: puts a map together from its parts — index, arena, codec, the store over them, sharing, the worker
 * pool and, for a persisted map, its persistence — and fills it. A memory-only map and a persisted one are two
 * assemblies of the same parts: `memoryParts` starts empty; `openParts` opens the engine, then takes the map's
 * memory from its image when the image is current, or rebuilds it by one scan of the engine. `closeParts` is the
 * way back, at close.
 */

import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ENTRY_HEADER_SIZE, Engine } from '@heapless/engine';
import type { FieldSpec } from '@heapless/struct';
import { MsgpackCodec, type Structures } from '../codec/msgpack-codec.js';
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { isUtf8Key } from '../key-bytes.js';
import { Arena, NO_EXPIRY } from '../memory/arena.js';
import { HashTable } from '../memory/hash-table.js';
import { beginImageLoad, type PendingImage, writeImage } from '../persist/image.js';
import type { ImageContent } from '../persist/image-header.js';
import { type ImageEvery, ImageSchedule, imageEveryOf } from '../persist/image-schedule.js';
import { type ImageLoader, native, warnIfNotMapped } from '../persist/native.js';
import {
  type DirectoryState,
  directoryFromImage,
  EnginePersistence,
  FORMAT_VERSION,
  type ImageTag,
  imageDirectoryState,
  type MapMeta,
  type MapPersistence,
  NS_DATA,
  packImageMeta,
  prepareDirectory,
} from '../persist/persistence.js';
import { StoredValue, storedExpiryFilter } from '../persist/stored-value.js';
import type { StructLayout } from '../struct.js';
import { ImagePages } from './image-pages.js';
import { MapCodec } from './map-codec.js';
import { capacityFor, MapIndex } from './map-index.js';
import type { MapSource, OffHeapMapOpenOptions, OffHeapMapOptions } from './map-options.js';
import { MapParallel } from './map-parallel.js';
import { decodeSuffix, LOGS_GONE, type ReplaySuffix, replaySuffix } from './map-replay.js';
import { MapSharing } from './map-sharing.js';
import { MapStore } from './map-store.js';
import { PendingSuffix } from './pending-suffix.js';
import { Seqlock } from './seqlock.js';

/** Default msgpackr shared structures: up to 32 keeps structure ids one byte long. */
const DEFAULT_SHARED_STRUCTURES = 32;
/** Default size of the buffer the load at open reads into: large enough that a scan call costs little per entry. */
const LOAD_BUFFER_BYTES = 1 << 20;

/** How a map got its contents (`stats()`). */
export interface MapOrigin {
  readonly loadedFrom: MapSource;
  readonly imageLoader: ImageLoader | null;
  readonly imageCheck: 'open' | 'stream' | null;
  readonly imageRejected: string | null;
  /** Writes replayed from the engine's WAL onto the image (0 for a current image, a scan or a memory map). */
  readonly replayed: number;
}

/** Everything a map is made of, handed whole to its constructor. */
export interface MapParts<F extends FieldSpec = FieldSpec> {
  readonly keysAreStrings: boolean;
  /** The values' codec: msgpack, or the struct layout. */
  readonly codec: MapCodec<F>;
  readonly arena: Arena;
  readonly index: MapIndex;
  readonly store: MapStore;
  readonly seqlock: Seqlock;
  readonly sharing: MapSharing;
  readonly parallel: MapParallel;
  /** The engine side of a persisted map; null for a memory-only map. */
  readonly persistence: MapPersistence | null;
  readonly origin: MapOrigin;
  /** The periodic image writer of a persisted map that keeps an image, else null. */
  readonly images: ImageSchedule | null;
  /** The WAL writes a crash open still owes the image, folded in after the open (pending-suffix.ts), else null. */
  readonly pending: PendingSuffix | null;
  /** The pages of a mapped image, copied in bulk before large batches and replays (image-pages.ts), else null. */
  readonly imagePages: ImagePages | null;
}

/** The options every map takes, checked (INVALID_ARGUMENT). */
interface Settings<F extends FieldSpec> {
  keys: 'string' | 'bytes';
  structType: StructLayout<F> | null;
  maxSharedStructures: number;
  threads: number;
  capacity: number;
  now: () => number;
}

function settingsOf<F extends FieldSpec>(options: OffHeapMapOptions<F>): Settings<F> {
  const keys = options.keys ?? 'string';
  if (keys !== 'string' && keys !== 'bytes') throw invalidArgument(`keys must be 'string' or 'bytes', got ${keys}`);
  const capacity = options.capacity ?? 0;
  if (!Number.isInteger(capacity) || capacity < 0) throw invalidArgument(`capacity must be an integer ≥ 0`);
  const threads = options.threads ?? availableParallelism();
  if (!Number.isInteger(threads) || threads < 1) throw invalidArgument('threads must be an integer ≥ 1');
  return {
    keys,
    structType: options.struct ?? null,
    maxSharedStructures: options.maxSharedStructures ?? DEFAULT_SHARED_STRUCTURES,
    threads,
    capacity,
    now: clockOf(options.now),
  };
}

/** The map's clock: `now` (a function returning ms since the epoch), or Date.now. Throws INVALID_ARGUMENT. */
function clockOf(now: unknown): () => number {
  if (now === undefined) return Date.now;
  if (typeof now !== 'function') throw invalidArgument('now must be a function returning ms since the epoch');
  return now as () => number;
}

/** Empty parts: an index sized for `capacity` entries, msgpackr starting from `structures`. */
function assemble<F extends FieldSpec>(
  s: Settings<F>,
  structures: Structures,
  capacity: number,
  persistence: MapPersistence | null,
  origin: MapOrigin,
): MapParts<F> {
  const codec = new MapCodec(
    s.structType,
    s.structType === null ? new MsgpackCodec(structures, s.maxSharedStructures, null) : null,
  );
  const arena = new Arena();
  const seqlock = new Seqlock();
  const index = new MapIndex(arena, seqlock, s.keys === 'string', capacityFor(capacity));
  const sharing = new MapSharing(seqlock, index, arena, codec, {
    id: randomUUID(),
    keys: s.keys,
    struct: s.structType === null ? null : s.structType.fields,
    maxSharedStructures: s.maxSharedStructures,
  });
  const store = new MapStore(index, arena, seqlock, sharing, s.now);
  const parallel = new MapParallel(s.threads, sharing, index);
  return {
    keysAreStrings: s.keys === 'string',
    codec,
    arena,
    index,
    store,
    seqlock,
    sharing,
    parallel,
    persistence,
    origin,
    images: null,
    pending: null,
    imagePages: null,
  };
}

const IN_MEMORY: MapOrigin = {
  loadedFrom: 'memory',
  imageLoader: null,
  imageCheck: null,
  imageRejected: null,
  replayed: 0,
};

/** The parts of an empty memory-only map. Throws INVALID_ARGUMENT on bad options. */
export function memoryParts<F extends FieldSpec>(options: OffHeapMapOptions<F>): MapParts<F> {
  const s = settingsOf(options);
  return assemble(s, [], s.capacity, null, IN_MEMORY);
}

/**
 * The parts of the map persisted in `options.dir`, filled from its image or its engine (see `OffHeapMap.open`).
 * On failure nothing stays open. Throws INVALID_ARGUMENT, INCOMPATIBLE, or the engine's errors.
 */
export async function openParts<F extends FieldSpec>(options: OffHeapMapOpenOptions<F>): Promise<MapParts<F>> {
  if (typeof options?.dir !== 'string') throw invalidArgument('open() needs options.dir');
  const s = settingsOf(options);
  const sync = options.sync ?? false;
  const useImage = options.image ?? true;
  const every = useImage ? imageEveryOf(options.imageEvery) : null;
  // The image's sections are mapped and checksummed on a native thread while the engine opens.
  const pending = useImage ? beginImageLoad(options.dir, native, options.verifiedImage) : 'map images disabled';
  const imageCheck = typeof pending === 'string' ? null : pending.checked;
  if (typeof pending !== 'string') warnIfNotMapped();
  let engine: Engine;
  try {
    // The WAL after the image's tag stays until a newer image is written: an open after a crash replays it.
    const pin = typeof pending === 'string' ? {} : { retainWalAfter: Math.max(-1, pending.sequence - 1) };
    const expiryFilter = storedExpiryFilter(s.structType?.size ?? null);
    engine = await Engine.open(options.dir, { ...options.engine, sync, ...pin, expiryFilter });
  } catch (err) {
    if (typeof pending !== 'string') pending.drop();
    throw err;
  }
  try {
    const meta: MapMeta = {
      format: FORMAT_VERSION,
      keys: s.keys,
      codec: s.structType === null ? 'msgpack' : 'struct',
      struct: s.structType === null ? null : s.structType.signature,
    };
    const { state, image, replay, loader } = await directoryAndImage(engine, meta, pending);
    const fromImage = typeof image !== 'string';
    const persistence = new EnginePersistence(
      engine,
      sync,
      useImage ? { dir: options.dir, meta, loadedSequence: fromImage ? image.sequence : -1 } : null,
      s.structType?.size ?? null,
    );
    if (fromImage) {
      // The meta keys as of the image, then as the writes after it left them (map-replay.ts).
      const writes = replay === null ? null : decodeSuffix(replay, s.keys === 'string', s.structType?.size ?? null);
      const origin: MapOrigin = {
        loadedFrom: 'image',
        imageLoader: loader,
        imageCheck,
        imageRejected: null,
        replayed: writes?.keys.length ?? 0,
      };
      const current = writes?.metaChanged === true ? await prepareDirectory(engine, meta) : state;
      const parts = assemble(s, writes?.structures ?? current.structures, 0, persistence, origin);
      restoreImage(parts, image);
      // The data writes go into the map's memory after the open returns, each key's before it is read.
      const imagePages = loader === 'mapped' ? new ImagePages(parts.index, parts.arena) : null;
      const pending = writes === null || writes.keys.length === 0 ? null : new PendingSuffix(parts, writes, imagePages);
      return withImages({ ...parts, pending, imagePages }, persistence, options.dir, every);
    }
    const parts = assemble(s, state.structures, Math.max(s.capacity, state.countHint), persistence, {
      loadedFrom: 'scan',
      imageLoader: null,
      imageCheck: null,
      imageRejected: image,
      replayed: 0,
    });
    await loadFromEngine(engine, parts, options.loadBufferBytes ?? LOAD_BUFFER_BYTES);
    return withImages(parts, persistence, options.dir, every);
  } catch (err) {
    await engine.close();
    throw err;
  }
}

/**
 * Writes the map's memory as the image `tag` names (after any growth has finished; readers are gone by then, so
 * nothing is published). An image that cannot be written is reported as a process warning (code
 * HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED): nothing is lost, the next open scans the engine.
 */
/**
 * Ends the parts of a map that takes no more writes: sharing (readers' access) and the worker pool, then for a
 * persisted map the image schedule; waits for the engine writes, brings in what a crash open still owes
 * (`settleOwed`), tags the engine's state, writes the map image and closes the engine.
 */
export async function closeParts(parts: MapParts, settleOwed: () => void): Promise<void> {
  parts.sharing.close();
  await parts.parallel.close();
  const p = parts.persistence;
  if (p === null) return;
  await parts.images?.close();
  await p.settle();
  let folded = true;
  try {
    settleOwed();
  } catch (err) {
    // The engine has every write: the next open replays them again onto the older image.
    folded = false;
    process.emitWarning(`map image not written: ${String(err)}`, { code: 'HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED' });
  }
  const tag = folded ? await p.tag(parts.index.count) : null;
  if (tag !== null) writeMapImage(tag, parts.index, parts.arena, parts.store, parts.codec);
  await p.close();
}

function writeMapImage(tag: ImageTag, index: MapIndex, arena: Arena, store: MapStore, codec: MapCodec): void {
  index.finishGrowth();
  const content = imageContentOf(tag, index, arena, store, codec);
  try {
    writeImage(tag.dir, content, (i) => arena.usedBytesOf(i));
  } catch (err) {
    process.emitWarning(`map image not written: ${String(err)}`, { code: 'HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED' });
  }
}

/**
 * The map's memory as an image's content, tagged with `tag` (its id and engine sequence). Views of the live
 * buffers, not copies: write it out before the map changes again. The index must not be growing.
 */
function imageContentOf(
  tag: { id: Uint8Array; sequence: number; meta: MapMeta },
  index: MapIndex,
  arena: Arena,
  store: MapStore,
  codec: MapCodec,
): ImageContent {
  const t = index.table;
  return {
    id: tag.id,
    sequence: tag.sequence,
    entries: index.count,
    payload: store.payload,
    table: t.sab,
    capacity: t.capacity,
    live: t.live,
    tombstones: t.tombstones,
    segments: arena.buffers,
    arena: arena.state(),
    meta: packImageMeta(tag.meta, codec.structures()),
  };
}

/** `parts` with the periodic image writer `every` asks for (none when the map keeps no image). */
function withImages<F extends FieldSpec>(
  parts: MapParts<F>,
  persistence: EnginePersistence,
  dir: string,
  every: ImageEvery | null,
): MapParts<F> {
  if (every === null) return parts;
  const { index, arena, store, codec, sharing, pending } = parts;
  const meta = persistence.imageMeta!;
  const images = new ImageSchedule(persistence, dir, every, {
    ready: () => index.old === null || index.pins === 0,
    capture: (id, sequence) => {
      pending?.settle();
      // Growth pending: finish it (readers learn the new layout) so that the image has one table.
      if (index.finishGrowth()) sharing.publish();
      return {
        content: imageContentOf({ id, sequence, meta }, index, arena, store, codec),
        segmentBytes: (i) => arena.usedBytesOf(i),
      };
    },
  });
  return { ...parts, images };
}

/** Takes the memory of a map image into fresh parts. */
function restoreImage(parts: MapParts, image: ImageContent): void {
  parts.arena.restore(image.segments, image.arena);
  const table = new HashTable(image.capacity, image.table);
  table.live = image.live;
  table.tombstones = image.tombstones;
  parts.index.restore(table, image.entries);
  parts.store.payload = image.payload;
  parts.store.rebuildExpiries();
}

/**
 * Rebuilds index and arena with one sequential scan of the engine's data range, through its bulk read: entries
 * are copied straight from blocks into one reused buffer (no key/value copies, no arrays per entry).
 */
async function loadFromEngine(engine: Engine, parts: MapParts, bufferBytes: number): Promise<void> {
  const it = engine.iterator({ gte: Uint8Array.of(NS_DATA), lt: Uint8Array.of(NS_DATA + 1), fillCache: false });
  const stored = new StoredValue(parts.codec.structType?.size ?? null);
  // Keys that expired by the time the open started are not loaded (the engine keeps them until compaction drops them).
  const now = parts.store.now();
  try {
    let buf = new Uint8Array(bufferBytes);
    let dv = new DataView(buf.buffer);
    for (;;) {
      const end = it.nextvInto(buf, 0);
      if (end === 0) break;
      if (end < 0) {
        buf = new Uint8Array(Math.max(-end, buf.length * 2));
        dv = new DataView(buf.buffer);
        continue;
      }
      for (let p = 0; p < end; ) {
        const klen = dv.getUint32(p, true);
        const vlen = dv.getUint32(p + 4, true);
        p += ENTRY_HEADER_SIZE;
        loadEntry(parts, buf.subarray(p, p + klen), stored, stored.read(buf, p + klen, vlen, 0), buf, now);
        p += klen + vlen;
      }
    }
  } finally {
    await it.close();
  }
}

/**
 * Adds an entry read back from the engine (`engineKey`: the namespace byte, then the key); nothing is persisted. A
 * string map refuses (INCOMPATIBLE) a key whose bytes are not UTF-8: no string key names it, and decoding it with
 * replacement characters would alias it with another key.
 */
function loadEntry(
  parts: MapParts,
  engineKey: Uint8Array,
  stored: StoredValue,
  vlen: number,
  buf: Uint8Array,
  now: number,
): void {
  if (parts.keysAreStrings && !isUtf8Key(engineKey, 1, engineKey.length - 1)) {
    throw new OffHeapError(
      OffHeapErrorCodes.INCOMPATIBLE,
      `the engine holds key 0x${Buffer.from(engineKey.subarray(1, 65)).toString('hex')} which is not UTF-8: a map of string keys cannot hold it (open it with keys: 'bytes')`,
    );
  }
  if (parts.codec.structType !== null && vlen !== parts.codec.structType.size) {
    throw new OffHeapError(
      OffHeapErrorCodes.INCOMPATIBLE,
      `stored struct value of ${vlen} bytes, the layout is ${parts.codec.structType.size} bytes`,
    );
  }
  if (stored.expiresAt !== NO_EXPIRY && stored.expiresAt <= now) return;
  parts.store.load(engineKey, buf.subarray(stored.start, stored.start + vlen), stored.version, stored.expiresAt);
}

/**
 * The directory state, and the map image's content if the image is the engine's current state and intact, else why
 * not. A current image carries the meta keys' values: one engine read instead of four (cold table opens). Always
 * releases `pending`. Throws INCOMPATIBLE.
 */
async function directoryAndImage(
  engine: Engine,
  want: MapMeta,
  pending: PendingImage | string,
): Promise<{ state: DirectoryState; image: ImageContent | string; replay: ReplaySuffix | null; loader: ImageLoader }> {
  if (typeof pending === 'string') {
    return { state: await prepareDirectory(engine, want), image: pending, replay: null, loader: 'read' };
  }
  let current: DirectoryState | string;
  let replay: ReplaySuffix | string;
  try {
    current = directoryFromImage(engine, want, pending);
    // Not current: an image written while the map ran, followed by more writes the engine still has (map-replay.ts).
    replay = typeof current === 'string' ? await replaySuffix(engine, pending) : 'current';
  } catch (err) {
    pending.drop();
    throw err;
  }
  if (typeof current !== 'string')
    return { state: current, image: pending.finish(), replay: null, loader: pending.loader };
  if (typeof replay !== 'string') {
    // The image's meta keys: the caller applies what the writes after it changed (structures added).
    let state: DirectoryState | string;
    try {
      state = imageDirectoryState(engine, want, pending.meta);
    } catch (err) {
      pending.drop();
      throw err;
    }
    if (typeof state === 'string') {
      pending.drop();
      return { state: await prepareDirectory(engine, want), image: state, replay: null, loader: 'read' };
    }
    const image = pending.finish();
    if (typeof image !== 'string') return { state, image, replay, loader: pending.loader };
    return { state: await prepareDirectory(engine, want), image: `${current}; ${image}`, replay: null, loader: 'read' };
  }
  pending.drop();
  if (replay.startsWith(LOGS_GONE)) {
    process.emitWarning(`map image of ${engine.location} not used, the map is rebuilt by a scan: ${replay}`, {
      code: 'HEAPLESS_WARN_OFFHEAP_IMAGE_REPLAY_UNAVAILABLE',
    });
  }
  return { state: await prepareDirectory(engine, want), image: `${current}; ${replay}`, replay: null, loader: 'read' };
}
