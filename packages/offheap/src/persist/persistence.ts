/**
 * The durable side of a persisted map: how its writes reach its engine (the keys it uses: directory-meta.ts).
 */
import { randomBytes } from 'node:crypto';
import { ENTRY_HEADER_SIZE, type Engine, type EngineStats, WriteBatch, type WriteOperation } from '@heapless/engine';
import { pack } from 'msgpackr';
import type { Structures } from '../codec/msgpack-codec.js';
import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { type MapKey, utf8Length, writeUtf8 } from '../key-bytes.js';
import { NO_EXPIRY } from '../memory/arena.js';
import { COUNT_KEY, IMAGE_KEY, type MapMeta, STRUCTURES_KEY, SYNC_KEY } from './directory-meta.js';
import { NS_DATA } from './namespaces.js';
import { StoredValue, storedHeaderBytes, writeStoredHeader } from './stored-value.js';

export {
  COUNT_KEY,
  type DirectoryState,
  directoryFromImage,
  FORMAT_VERSION,
  FORMAT_VERSION_1,
  IMAGE_KEY,
  imageDirectoryState,
  type MapMeta,
  META_KEY,
  packImageMeta,
  prepareDirectory,
  STRUCTURES_KEY,
  SYNC_KEY,
} from './directory-meta.js';
export { NS_DATA, NS_META, NS_USER_META } from './namespaces.js';

const EMPTY = new Uint8Array(0);
/** The first engine key after every user key. */
const DATA_END = Uint8Array.of(NS_DATA + 1);
/** Where `entriesInRange` copies entries to: a page of small entries fits at once; a larger one grows it. */
const RANGE_SCRATCH_BYTES = 64 * 1024;
const noop = (): void => {};

/**
 * Receives one entry: key `b[keyOff, keyOff+keyLen)`, and its value's `valueLen` bytes at `valueOff` (a view valid
 * during the call); false stops the walk.
 */
export type EntryVisitor = (b: Buffer, keyOff: number, keyLen: number, valueOff: number, valueLen: number) => boolean;

/** Where and as what the map writes its image at close (see `MapPersistence.tag`). */
export interface ImageTag {
  /** The directory the image goes to. */
  readonly dir: string;
  /** The id the engine now holds under its `image` key, and its last sequence: the image is of this state. */
  readonly id: Uint8Array;
  readonly sequence: number;
  /** What the engine's meta key holds (carried by the image). */
  readonly meta: MapMeta;
}

/** A persisted map's image settings, fixed at open. */
export interface ImageSettings {
  readonly dir: string;
  readonly meta: MapMeta;
  /** The engine sequence the map's image was loaded at (-1: the map was not loaded from an image). */
  readonly loadedSequence: number;
}

/**
 * The durable side of a persisted map (a memory-only map has none). The map drives its close: `settle`, then
 * `tag`, then (given a tag) writes its image, then `close`.
 */
export interface MapPersistence {
  /** The engine every write goes to (the change feed reads its commits and its retained WALs: map-changes.ts). */
  readonly engine: Engine;
  /**
   * Visits the entries in [`lower`, `upper`), in key byte order, each with its value bytes, skipping those expired
   * at `now`, until `visit` returns false.
   */
  entriesInRange(lower: Uint8Array, upper: Uint8Array | null, now: number, visit: EntryVisitor): void;
  /**
   * Records that `key` now maps to `value` (views into the arena: copied before returning) of `version` and
   * `expiresAt` (NO_EXPIRY: none), and the msgpackr structure table in the same atomic write, first, when it grew
   * with this value.
   */
  put(key: Uint8Array, value: Uint8Array, version: number, expiresAt: number, structures: Structures | null): void;
  /** Records that `key` (a string key as its UTF-8) is deleted. */
  del(key: MapKey): void;
  /** Resolves when every write recorded so far is durable at the map's sync level; rejects with the first failure. */
  durable(): Promise<void>;
  /** Resolves when every write recorded so far is fsynced. */
  flush(): Promise<void>;
  /** The first write failure, once there is one. */
  readonly failure: unknown;
  /** The engine's counters and level sizes, for monitoring. */
  engineStats(): EngineStats;
  /** Resolves when every write recorded so far has settled (succeeded or failed). */
  settle(): Promise<void>;
  /**
   * At close, after `settle`: records `entries` (the next open's sizing hint) and, when the map keeps an image,
   * tags the engine's state with a fresh image id; returns where and as what to write the image, or null when none
   * is to be written (no image kept, a write failed, or the map is unchanged since it was loaded from its image,
   * which stays current).
   */
  tag(entries: number): Promise<ImageTag | null>;
  /** Closes the engine (after `tag`, and after the image was written). */
  close(): Promise<void>;
  /**
   * An empty engine batch (one reused scratch: fill it and pass it to `writeBatch` before asking again), holding
   * first the msgpackr structure table when `structures` is given.
   */
  newBatch(structures: Structures | null): WriteBatch;
  /**
   * Writes `batch` as one atomic engine write (durable at the map's level, or fsynced with `sync`); resolves with
   * the sequence of its last entry once durable, rejects with PERSIST_FAILED if it failed.
   */
  writeBatch(batch: WriteBatch, sync: boolean): Promise<{ sequence: number }>;
  /** The value of the engine key `key` (a metadata key, NS_USER_META first), or undefined. */
  metaValue(key: Uint8Array): Uint8Array | undefined;
  /** The names (UTF-8, without the namespace byte) of every key of namespace `prefix`, in byte order. */
  metaNames(prefix: number): Uint8Array[];
  /** The engine's checkpoint into `dir` (see `Engine.checkpoint`). */
  checkpoint(dir: string): Promise<void>;
}

/**
 * Writes every mutation to the engine as it happens: one engine write per mutation, which the engine group-commits
 * (with `sync`, one fdatasync covers every write that arrived while the previous one ran).
 */
export class EnginePersistence implements MapPersistence {
  failure: unknown = undefined;
  /** Distinct engine promises not settled yet, and who waits for them all to settle. */
  private pending = 0;
  private waiters: (() => void)[] = [];
  /** The last distinct promise the engine returned. */
  private lastRaw: Promise<void> | null = null;
  private readonly onSettled = (): void => {
    if (--this.pending > 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  };
  private keyScratch: Buffer = Buffer.allocUnsafeSlow(1024);
  /** Reads the stored values of `entriesInRange`. */
  private readonly storedReader: StoredValue;
  /** Where `put` lays out a stored value (header, then the value: stored-value.ts) for the engine to copy. */
  private valueScratch: Buffer = Buffer.allocUnsafeSlow(1024);
  private rangeScratch: Buffer = Buffer.allocUnsafeSlow(RANGE_SCRATCH_BYTES);
  /** The engine batch every map batch is written through (the engine copies it before `write` returns). */
  private readonly batchScratch = new WriteBatch(undefined, 4096);
  private readonly onError = (err: unknown): void => {
    if (this.failure === undefined) this.failure = err;
    this.onSettled();
  };

  /** Bytes of keys and values written so far: the periodic image's trigger counts them (`onBytes`). */
  private bytesWritten = 0;
  /** The count at which `due` is called (Infinity: none armed). */
  private dueAt = Number.POSITIVE_INFINITY;
  private due: (() => void) | null = null;
  /** The engine sequence of the newest image on disk that this engine's state follows from (-1: none). */
  private newestImage: number;

  engineStats(): EngineStats {
    return this.engine.stats();
  }

  /** What the map's image carries as its meta (null: the map keeps no image). */
  get imageMeta(): MapMeta | null {
    return this.image?.meta ?? null;
  }

  /** `image`: where the map keeps its image, or null (`image: false`). */
  /** `structSize`: a struct map's layout size (null: msgpack), to tell format-1 stored values (stored-value.ts). */
  constructor(
    readonly engine: Engine,
    private readonly sync: boolean,
    private readonly image: ImageSettings | null,
    structSize: number | null,
  ) {
    this.newestImage = image === null ? -1 : image.loadedSequence;
    this.storedReader = new StoredValue(structSize);
  }

  /** The engine sequence of the newest image on disk that this engine's state follows from (-1: none). */
  get imageSequence(): number {
    return this.newestImage;
  }

  /** Records that an image of the engine's state at `sequence` is now on disk (image-schedule.ts wrote it). */
  imageWritten(sequence: number): void {
    this.newestImage = sequence;
  }

  /**
   * Calls `due` once, during the write that takes the bytes of keys and values written from now past `bytes`;
   * replaces the trigger armed before. The periodic image's byte trigger (image-schedule.ts).
   */
  onBytes(bytes: number, due: () => void): void {
    this.dueAt = this.bytesWritten + bytes;
    this.due = due;
  }

  /** Disarms the trigger of `onBytes`. */
  cancelOnBytes(): void {
    this.dueAt = Number.POSITIVE_INFINITY;
    this.due = null;
  }

  put(key: Uint8Array, value: Uint8Array, version: number, expiresAt: number, structures: Structures | null): void {
    if ((this.bytesWritten += key.length + value.length) >= this.dueAt) this.fireDue();
    const k = this.dataKey(key);
    const stored = this.storedValue(value, version, expiresAt);
    if (structures === null) {
      this.track(this.engine.put(k, stored, { sync: this.sync }));
      return;
    }
    const ops: WriteOperation[] = [
      { type: 'put', key: STRUCTURES_KEY, value: pack(structures) },
      { type: 'put', key: k, value: stored },
    ];
    this.track(this.engine.write(ops, { sync: this.sync }));
  }

  del(key: MapKey): void {
    const k = this.dataKey(key);
    if ((this.bytesWritten += k.length - 1) >= this.dueAt) this.fireDue();
    this.track(this.engine.delete(k, { sync: this.sync }));
  }

  /**
   * The engine appends writes to its WAL in call order and one fdatasync covers everything appended before it, so
   * once the last write's promise settled, every earlier write is durable at the same level (an earlier promise
   * may still be waiting on write backpressure, which is not durability). Writes made after the call are not
   * waited for.
   */
  async durable(): Promise<void> {
    const p = this.lastRaw;
    if (p !== null) await p.then(noop, noop);
    this.check();
  }

  async flush(): Promise<void> {
    this.check();
    this.track(this.engine.put(SYNC_KEY, EMPTY, { sync: true }));
    await this.durable();
  }

  async settle(): Promise<void> {
    if (this.pending > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /**
   * Flushes the engine's memtable into a table, records the entry count as the next open's sizing hint, and with an
   * image writes a fresh id to the engine, to tag the image the map then writes with it and the engine's last
   * sequence. A map unchanged since it was loaded from an image keeps that image (null, nothing written).
   */
  async tag(entries: number): Promise<ImageTag | null> {
    const image = this.image;
    if (image !== null && this.failure === undefined && this.engine.stats().lastSequence === this.newestImage) {
      return null;
    }
    // Into a table with everything written so far: the next open then replays a WAL of two records instead of up
    // to a memtable's worth (about 5-50 µs per record, cold).
    if (this.failure === undefined) {
      await this.engine.flush().catch((err: unknown) => {
        this.failure = err;
      });
    }
    const c = new Uint8Array(4);
    new DataView(c.buffer).setUint32(0, entries, true);
    this.track(this.engine.put(COUNT_KEY, c));
    const id = randomBytes(16);
    if (image !== null) this.track(this.engine.put(IMAGE_KEY, id));
    await this.settle();
    if (image === null || this.failure !== undefined) return null;
    return { dir: image.dir, id, sequence: this.engine.stats().lastSequence, meta: image.meta };
  }

  async close(): Promise<void> {
    await this.engine.close();
  }

  checkpoint(dir: string): Promise<void> {
    return this.engine.checkpoint(dir);
  }

  /**
   * Calls `visit(b, keyOff, keyLen, valueOff, valueLen)` with each user key in [`lower`, `upper`) in byte order and
   * its value bytes, skipping keys expired at `now`, from the engine's sorted iterator — one seek, then entries
   * copied from the blocks into one reused buffer — until it returns false. The view is valid during the call only.
   * The engine holds every write of the map, applied to its memtable before the map's write returned, so these are
   * the map's entries while no engine write failed. Throws the engine's CorruptionError, or CLOSED.
   */
  entriesInRange(lower: Uint8Array, upper: Uint8Array | null, now: number, visit: EntryVisitor): void {
    const stored = this.storedReader;
    const upperKey = upper === null ? DATA_END : this.engineKeyOf(upper);
    // No limit for the engine: the expired entries it would count are skipped here; `visit` says when to stop.
    this.visitRange(this.engineKeyOf(lower), upperKey, 0, (b, keyOff, keyLen, valueOff, valueLen) => {
      const n = stored.read(b, valueOff, valueLen, 0);
      if (stored.expiresAt !== NO_EXPIRY && stored.expiresAt <= now) return true;
      return visit(b, keyOff, keyLen, stored.start, n);
    });
  }

  newBatch(structures: Structures | null): WriteBatch {
    const b = this.batchScratch.clear();
    if (structures !== null) b.put(STRUCTURES_KEY, pack(structures));
    return b;
  }

  writeBatch(batch: WriteBatch, sync: boolean): Promise<{ sequence: number }> {
    const p = this.engine.write(batch, { sync: sync || this.sync });
    // The engine applied the batch (or refused it) before returning: its last sequence is the batch's last entry.
    const sequence = this.engine.stats().lastSequence;
    this.track(p);
    return p.then(
      () => ({ sequence }),
      (cause: unknown) => {
        throw new OffHeapError(OffHeapErrorCodes.PERSIST_FAILED, `engine write failed: ${String(cause)}`, { cause });
      },
    );
  }

  metaValue(key: Uint8Array): Uint8Array | undefined {
    return this.engine.getSync(key);
  }

  metaNames(prefix: number): Uint8Array[] {
    const names: Uint8Array[] = [];
    this.visitRange(Uint8Array.of(prefix), Uint8Array.of(prefix + 1), 0, (b, keyOff, keyLen) => {
      names.push(b.slice(keyOff, keyOff + keyLen));
      return true;
    });
    return names;
  }

  /** `visit` with each engine entry in [`gte`, `lt`) (at most `limit`; 0: all), its key after the namespace byte. */
  private visitRange(gte: Uint8Array, lt: Uint8Array, limit: number, visit: EntryVisitor): void {
    const it = this.engine.iterator(limit > 0 ? { gte, lt, limit } : { gte, lt });
    try {
      let buf = this.rangeScratch;
      for (;;) {
        const end = it.nextvInto(buf, 0);
        if (end === 0) return;
        if (end < 0) {
          buf = this.rangeScratch = Buffer.allocUnsafeSlow(Math.max(-end, buf.length * 2));
          continue;
        }
        for (let p = 0; p < end; ) {
          const klen = buf.readUInt32LE(p);
          const vlen = buf.readUInt32LE(p + 4);
          p += ENTRY_HEADER_SIZE;
          if (!visit(buf, p + 1, klen - 1, p + klen, vlen)) return;
          p += klen + vlen;
        }
      }
    } finally {
      void it.close();
    }
  }

  /** A copy of `key` with the data namespace byte before it. */
  private engineKeyOf(key: Uint8Array): Uint8Array {
    const out = new Uint8Array(key.length + 1);
    out[0] = NS_DATA;
    out.set(key, 1);
    return out;
  }

  /**
   * The engine key of a user key: NS_DATA then the key (a string key's UTF-8), in a scratch the engine copies from
   * before returning.
   */
  private dataKey(key: MapKey): Uint8Array {
    const n = (typeof key === 'string' ? utf8Length(key) : key.length) + 1;
    if (n > this.keyScratch.length) this.keyScratch = Buffer.allocUnsafeSlow(Math.max(n, this.keyScratch.length * 2));
    this.keyScratch[0] = NS_DATA;
    if (typeof key === 'string') writeUtf8(key, this.keyScratch, 1);
    else this.keyScratch.set(key, 1);
    return this.keyScratch.subarray(0, n);
  }

  /** `value` with its stored header before it (stored-value.ts), in a scratch the engine copies from. */
  private storedValue(value: Uint8Array, version: number, expiresAt: number): Uint8Array {
    const n = storedHeaderBytes(expiresAt) + value.length;
    if (n > this.valueScratch.length) {
      this.valueScratch = Buffer.allocUnsafeSlow(Math.max(n, this.valueScratch.length * 2));
    }
    const start = writeStoredHeader(this.valueScratch, 0, version, expiresAt);
    this.valueScratch.set(value, start);
    return this.valueScratch.subarray(0, n);
  }

  /** The `onBytes` trigger fired: it is called once, until armed again. */
  private fireDue(): void {
    const due = this.due;
    this.cancelOnBytes();
    due?.();
  }

  private track(p: Promise<void>): void {
    // The engine hands one promise to every write that needs no waiting, and one per group commit: track each
    // distinct promise once, so the common case allocates nothing here.
    if (p === this.lastRaw) return;
    this.lastRaw = p;
    this.pending++;
    p.then(this.onSettled, this.onError);
  }

  private check(): void {
    if (this.failure !== undefined) {
      throw new OffHeapError(OffHeapErrorCodes.PERSIST_FAILED, `engine write failed: ${String(this.failure)}`, {
        cause: this.failure,
      });
    }
  }
}
