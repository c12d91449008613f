/**
 * The KV actor's methods as the server defines them (`@heapless/actor`'s `KvActor` class implements this interface),
 * so that a client types `connect<KvActor>(url)` or `httpClient<KvActor>(url)` with this package alone: no server
 * package, no Node types. A ref turns each method into one returning a promise of its (awaited) result, and `watch`
 * into a `RemoteStream` of its changes.
 */

import type { Streamed } from '../protocol/streamed.js';
import type { KvScanOptions, KvScanPage, KvWriteOptions } from './collection.js';
import type { KvBatchOp, KvBatchOptions, KvBatchResult } from './kv-batch.js';
import type { KvChange, KvWatchOptions } from './kv-watch.js';

/** What the KV actor's `checkpoint` answers. */
export interface KvCheckpoint {
  /** The checkpoint's directory on the server. */
  dir: string;
  /** The engine sequence of the map image in it (-1: none, the copy opens by a scan). */
  imageSequence: number;
  /** Milliseconds the checkpoint took. */
  ms: number;
}

/** What the KV actor's `stats()` answers: its map's memory accounting (off-heap bytes) and the server's JS heap. */
export interface KvStats {
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
  /** Keys with an expiry (expired ones not removed yet included). */
  expiring: number;
  /** Bytes of the map's expiry index (off the JS heap). */
  expiryIndexBytes: number;
  segments: number;
  /** `'memory'`: a memory-only map; `'scan'`: rebuilt from the engine at open; `'image'`: loaded from its map image. */
  loadedFrom: 'memory' | 'scan' | 'image';
  /** How the image was read when `loadedFrom` is `'image'` (`'mapped'` by the native helper, or `'read'`), else null. */
  imageLoader: 'mapped' | 'read' | null;
  /** Why the open scanned instead of using the map image (`'no image'`, stale, checksum mismatch...), else null. */
  imageRejected: string | null;
  /** The server process's JS heap in use. */
  heapUsedBytes: number;
}

/**
 * The KV actor: string keys, values stored as the bytes the client sent and returned as they are. Each method's
 * errors are in the actor package's README ("KvActor methods") and FORMAT.md.
 */
export interface KvActor {
  /** The stored bytes of `key`'s value, or undefined. */
  get(key: string): Uint8Array | undefined;
  /** The values of `keys`, in order (undefined for a miss); refused with RESULT_TOO_LARGE past the server's bound. */
  getMany(keys: string[]): (Uint8Array | undefined)[];
  /** Stores `value`'s bytes under `key`; answered once durable at the server's level (or fsynced with `sync`). */
  set(key: string, value: Uint8Array, opts?: KvWriteOptions): Promise<void> | undefined;
  /** Stores every entry as one atomic batch. */
  setMany(entries: [string, Uint8Array][], opts?: KvWriteOptions): Promise<KvBatchResult>;
  /** Sets, deletes and named metadata as one atomic engine write. */
  batch(ops: KvBatchOp[], opts?: KvBatchOptions): Promise<KvBatchResult>;
  /** The bytes of metadata `name`, or undefined. */
  getMeta(name: string): Uint8Array | undefined;
  setMeta(name: string, value: Uint8Array, opts?: KvWriteOptions): Promise<KvBatchResult>;
  deleteMeta(name: string, opts?: KvWriteOptions): Promise<KvBatchResult>;
  /** Removes `key`; true if it was there. */
  delete(key: string, opts?: KvWriteOptions): boolean | Promise<boolean>;
  has(key: string): boolean;
  /** One page of keys and values in key order; pass its `cursor` back for the next. */
  scan(opts?: KvScanOptions): KvScanPage;
  /** The number of keys. */
  size(): number;
  stats(): KvStats;
  /** Resolves once every write answered so far is fsynced. */
  flush(): Promise<void>;
  /** Writes a checkpoint named `name` under the server's checkpoint root (FORBIDDEN without one). */
  checkpoint(name: string): Promise<KvCheckpoint>;
  /** The changes of keys starting with `prefix`, from now on or after `opts.fromSequence`. */
  watch(prefix: string, opts?: KvWatchOptions): Promise<Streamed<KvChange>>;
}
