import type { EngineOptions } from '@heapless/engine';
import type { FieldSpec } from '@heapless/struct';
import type { ImageStreamCheck, VerifiedImage } from '../persist/image-check.js';
import type { ImageLoader } from '../persist/native.js';
import type { StructLayout } from '../struct.js';

/** Keys are stored with a u16 length. */
export const MAX_KEY_BYTES = 0xffff;

export type { MapKey } from '../key-bytes.js';

/** Options of a memory-only map (`new OffHeapMap(options)`); `OffHeapMap.open` adds persistence options. */
export interface OffHeapMapOptions<F extends FieldSpec = FieldSpec> {
  /** Key kind: `'string'` (default; stored as UTF-8) or `'bytes'` (Uint8Array keys). */
  keys?: 'string' | 'bytes';
  /** Store values as this fixed struct layout instead of msgpack. */
  struct?: StructLayout<F>;
  /** Expected number of entries: sizes the index up front (the map grows by itself either way). */
  capacity?: number;
  /** msgpackr shared structures kept (default 32; above 32 structure ids take two bytes). */
  maxSharedStructures?: number;
  /** Worker threads for `scan`, `filter` and `getMany` (default: the number of cores). Started on first use. */
  threads?: number;
  /**
   * The owner's clock for expiries, in ms since the Unix epoch (default `Date.now`): for tests that move time. Readers
   * in other threads (`attach`, the worker pool) read `Date.now()` in their own thread.
   */
  now?: () => number;
}

/** A key's value with its version and expiry (`map.getEntry`). */
export interface MapEntry<V> {
  readonly value: V;
  /** Grows with each write of the key (FORMAT.md §12): the engine sequence of the write, for a persisted map. */
  readonly version: number;
  /** When the key expires, in ms since the Unix epoch; 0 for a key without an expiry. */
  readonly expiresAt: number;
}

/** When a written key expires (at most one of the two; neither: never). */
export interface ExpiryOptions {
  /** Expire this many milliseconds (> 0) after the write. */
  ttl?: number;
  /** Expire at this time, in ms since the Unix epoch (> 0). */
  expiresAt?: number;
}

/** Options of a `set`: its expiry, and a check of the key's version (at most one of the two). */
export interface SetOptions extends ExpiryOptions {
  /** Write only if the key has this version (`getEntry(key).version`). */
  ifVersion?: number;
  /** Write only if the key is absent (or expired). */
  ifAbsent?: boolean;
}

/** Options of a `delete`. */
export interface DeleteOptions {
  /** Delete only if the key has this version. */
  ifVersion?: number;
}

/** Options of `OffHeapMap.open`: a map persisted in an engine directory. */
export interface OffHeapMapOpenOptions<F extends FieldSpec = FieldSpec> extends OffHeapMapOptions<F> {
  /** The engine directory (created if missing). One map per directory; the engine locks it. */
  dir: string;
  /**
   * Durability of each write: true = `durable()` resolves after an fdatasync covering the write (group-committed
   * by the engine); false (default) = after the write is in the engine's WAL file (write(2) returned), so it
   * survives the process being killed, and a power loss may lose a suffix of writes but never one in the middle.
   */
  sync?: boolean;
  /** Engine tuning passed to `Engine.open` (its `sync` comes from above). */
  engine?: Omit<EngineOptions, 'sync'>;
  /** Size of the buffer the load at open reads entries into (default 1 MiB; grows for an entry that does not fit). */
  loadBufferBytes?: number;
  /**
   * Keep a map image (default true): `close()` writes the map's memory to `MAPIMAGE` in `dir`, and the next `open`
   * maps it back in about the time reading the file takes, instead of rebuilding the map entry by entry. An image
   * is used only if it matches the engine exactly (see FORMAT.md §10); otherwise the open scans the engine.
   */
  image?: boolean;
  /**
   * When the map writes its image while it runs (with `image`), besides at close: after `bytes` bytes of keys and
   * values written (default 64 MiB) and every `seconds` with writes (default 60); 0 turns either off, false both.
   * An open after a crash loads the newest image and replays the engine's writes after it (FORMAT.md §11). Each
   * image holds the writer while the map's memory is written to the page cache (tens of ms per GB).
   */
  imageEvery?: { bytes?: number; seconds?: number } | false;
  /**
   * The proof of an {@link ImageStreamCheck} run over the bytes of `dir/MAPIMAGE` as they were written (a checkpoint
   * download): when the file's header is the one checked, the native loader maps the sections without reading them
   * again for their checksums, so the open costs no read of the image and its pages come in from the file when first
   * touched (as LMDB's do). Without the native loader, or for another image, the open checks as always.
   */
  verifiedImage?: VerifiedImage;
}

/** How an open filled the map (`map.openStats`). */
export interface MapOpenStats {
  /** `'image'`: from its map image; `'scan'`: rebuilt from the engine; `'memory'`: a memory-only map. */
  readonly source: MapSource;
  /**
   * Engine writes replayed from the WAL onto the image (an image written while the map ran, then a crash). The open
   * returns before they are in the map's memory: each key's go in before it is read or written, the rest in the
   * background or before anything that sees the whole map (size, iteration, sharing, images, close).
   */
  readonly replayed: number;
  /** Of those, the writes not in the map's memory yet. */
  readonly replayPending: number;
  /**
   * Pages of the mapped image made private in bulk for those writes so far (only the pages they write; 0 for a small
   * replay, an image read into fresh memory, or without the native helper).
   */
  readonly replayPages: number;
  /**
   * Pages of the mapped image made private in bulk so far, for a replay of 256 writes or more and for batches of 16 or more
   * (image-pages.ts): each copied before the writes instead of in a page fault of its own. 0 for an image read into
   * fresh memory, a scan, or without the native helper.
   */
  readonly imagePagesCopied: number;
  /**
   * When the map opened from its image: where the sections' checksums were checked — `'open'` by reading the image
   * at this open, `'stream'` as the file was written (`verifiedImage`). Null otherwise.
   */
  readonly imageCheck: 'open' | 'stream' | null;
  /** Why the image was not used, when the open scanned. */
  readonly imageRejected: string | null;
}

/** How a map got its contents (`stats().loadedFrom`). */
export type MapSource = 'memory' | 'scan' | 'image';

/** Memory accounting of a map; every byte figure is off the JS heap (in SharedArrayBuffers). */
export interface OffHeapMapStats {
  entries: number;
  /** Bytes of index tables (two while growing). */
  indexBytes: number;
  indexCapacity: number;
  /** Used slots (live and tombstones) over capacity of the table inserts go to. */
  loadFactor: number;
  tombstones: number;
  /** True while the index is moving slots to a larger table. */
  growing: boolean;
  /** Bytes of all arena segments. */
  arenaBytes: number;
  /** Arena bytes handed out so far (live + garbage). */
  arenaUsedBytes: number;
  /** Bytes of blocks holding live records (header, key, value, class padding). */
  liveBytes: number;
  /** Bytes of headers, keys and values of live records, without padding. */
  payloadBytes: number;
  /** Bytes of freed blocks waiting for reuse, plus unusable segment tails. */
  garbageBytes: number;
  /** Keys in the index that have an expiry (expired ones the active expiry has not removed yet included). */
  expiring: number;
  /** Bytes of the expiry index (off the JS heap: FORMAT.md §13). */
  expiryIndexBytes: number;
  segments: number;
  /** `'memory'`: a memory-only map; `'scan'`: rebuilt from the engine at open; `'image'`: loaded from its map image. */
  loadedFrom: MapSource;
  /** How the image was read when `loadedFrom` is `'image'` (`'mapped'` by the native helper, or `'read'`), else null. */
  imageLoader: ImageLoader | null;
  /** Why the open scanned instead of using the map image (`'no image'`, stale, checksum mismatch...), else null. */
  imageRejected: string | null;
}
