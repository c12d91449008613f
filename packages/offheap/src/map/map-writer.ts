/**
 * The map's write core. Every change of a map's records goes through here — a set, a delete, a batch, a struct
 * view's in-place write — in one order: check that the map may be written (open, no engine write failed), bring in
 * the writes a crash open still owes for the key (pending-suffix.ts), change the memory (map-store.ts), then record
 * the change in the engine (persist/persistence.ts), with the msgpackr structure table when it grew since the engine
 * last got it. OffHeapMap is the API over it; a batch (map-batch.ts) collects operations and hands them here.
 */
import type { Structures } from '../codec/msgpack-codec.js';
import { closedError, invalidArgument, OffHeapError, OffHeapErrorCodes, VersionMismatchError } from '../errors.js';
import { hashBytes, KeyHasher, type MapKey } from '../key-bytes.js';
import { locOffset, locSegment, NO_EXPIRY, RECORD_HEADER_BYTES } from '../memory/arena.js';
import type { MapPersistence } from '../persist/persistence.js';
import { BULK_POPULATE_MIN_WRITES, type ImagePages } from './image-pages.js';
import {
  type BatchCommitter,
  type BatchOps,
  type BatchResult,
  type BatchWriteOptions,
  DELETE,
  SET,
  SET_META,
  SPAN,
} from './map-batch.js';
import type { MapCodec } from './map-codec.js';
import { addCounter } from './map-counters.js';
import type { MemoryMetadata } from './map-meta.js';
import type { MapParts } from './map-open.js';
import type { MapSharing } from './map-sharing.js';
import { ABSENT, ANY_VERSION, type MapStore, REMOVED_LIVE } from './map-store.js';
import type { PendingSuffix } from './pending-suffix.js';

/**
 * How many `durable()` calls in a row may resolve without an event-loop turn. One turn (a setImmediate, about a
 * microsecond) in this many calls costs nothing measurable beside a write(2) per call, and lets timers and I/O run
 * within a millisecond or so of a loop's work.
 */
const DURABLE_YIELD_EVERY = 1024;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class MapWriter implements BatchCommitter {
  private readonly keysAreStrings: boolean;
  private readonly codec: MapCodec;
  private readonly store: MapStore;
  private readonly sharing: MapSharing;
  private readonly persistence: MapPersistence | null;
  /** A mapped image's pages, copied in bulk before a large batch writes them (image-pages.ts), else null. */
  private readonly pages: ImagePages | null;
  /** The WAL writes a crash open replays after it returns (pending-suffix.ts), until all are in; else null. */
  private pending: PendingSuffix | null;
  /** Hashes a string key for `owe` (scratch of its own: the store's lookups keep theirs). */
  private readonly hasher = new KeyHasher();
  /** msgpackr structures grew and the engine has not been given them yet (it gets them with the next value). */
  private unsavedStructures = false;
  private closed = false;
  /** Calls of `durable()` since one last waited for the next event-loop turn. */
  private durableCalls = 0;
  /** A memory-only map's last version (a persisted map's versions are its engine's sequences). */
  private counter = 0;

  /** `memoryMeta`: where a memory-only map keeps its metadata (a persisted map's is in its engine). */
  constructor(
    parts: MapParts,
    private readonly memoryMeta: MemoryMetadata,
  ) {
    this.keysAreStrings = parts.keysAreStrings;
    this.codec = parts.codec;
    this.store = parts.store;
    this.sharing = parts.sharing;
    this.persistence = parts.persistence;
    this.pages = parts.imagePages;
    this.pending = parts.pending;
  }

  /**
   * Stores `value` (encoded by the map's codec) under `key`, if the key's version passes `check` (ANY_VERSION: no
   * check, ABSENT: the key must be absent, else the version it must have); returns the write's version. Throws as
   * `OffHeapMap.set`, VERSION_MISMATCH (nothing written).
   */
  set(key: MapKey, value: unknown, check: number, expiresAt: number): number {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    if (check !== ANY_VERSION) this.check(key, check);
    const bytes = this.codec.encode(value);
    if (this.codec.takeGrown()) {
      // Readers learn the new structures before any value using them can be seen; the engine gets them with it.
      this.sharing.publish();
      this.unsavedStructures = true;
    }
    return this.put(key, bytes, expiresAt);
  }

  /** Stores the value bytes `bytes` as they are under `key`; as `set`. Throws as `OffHeapMap.setBytes`. */
  setBytes(key: MapKey, bytes: Uint8Array, check: number, expiresAt: number): number {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    this.codec.checkBytes(bytes);
    if (check !== ANY_VERSION) this.check(key, check);
    return this.put(key, bytes, expiresAt);
  }

  /**
   * Removes `key` if its version passes `check` (as `set`); true if it was present. Throws as `OffHeapMap.delete`,
   * VERSION_MISMATCH (nothing written).
   */
  delete(key: MapKey, check: number): boolean {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    if (check !== ANY_VERSION) this.check(key, check);
    const removed = this.store.delete(key);
    if (removed === ABSENT) return false;
    // An expired record goes too (the engine still holds it), but it was absent to reads: false, as for none.
    if (this.persistence === null) this.counter++;
    else this.persistence.del(key);
    return removed === REMOVED_LIVE;
  }

  /**
   * Adds `delta` to the 64-bit signed integer value of `key` (absent: 0), keeping its expiry; returns the new value
   * and the write's version. Throws as `OffHeapMap.incr`.
   */
  incr(key: MapKey, delta: number | bigint): { value: number | bigint; version: number } {
    this.checkWritable();
    if (this.codec.structType !== null)
      throw invalidArgument('incr needs a msgpack map (a struct map has no counters)');
    if (this.pending !== null) this.owe(key);
    const store = this.store;
    const loc = store.liveLocation(key);
    let current: unknown;
    let expiresAt = NO_EXPIRY;
    if (loc >= 0) {
      const arena = store.arena;
      const seg = locSegment(loc);
      const off = locOffset(loc);
      current = this.codec.decode(arena, seg, off + RECORD_HEADER_BYTES + store.keyLength, arena.valueLength(seg, off));
      expiresAt = arena.expiresAt(seg, off);
    }
    const value = addCounter(key, current, delta);
    const bytes = this.codec.encode(value);
    return { value, version: this.put(key, bytes, expiresAt) };
  }

  /**
   * Gives `key` the expiry `expiresAt` (NO_EXPIRY: none), as a write of its value as it is (a new version, persisted);
   * returns false, writing nothing, if `key` is absent (or expired), or if `onlyIfExpiring` and it has no expiry.
   */
  setExpiry(key: MapKey, expiresAt: number, onlyIfExpiring: boolean): boolean {
    this.checkWritable();
    if (this.pending !== null) this.owe(key);
    const store = this.store;
    const loc = store.liveLocation(key);
    if (loc < 0) return false;
    const arena = store.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    if (onlyIfExpiring && arena.expiresAt(seg, off) === NO_EXPIRY) return false;
    const start = off + RECORD_HEADER_BYTES + store.keyLength;
    // A view of the record itself: the store writes it in place (the same bytes) or into a new block it fills
    // before it frees this one.
    this.put(key, arena.u8[seg]!.subarray(start, start + arena.valueLength(seg, off)), expiresAt);
    return true;
  }

  /**
   * Removes up to `max` keys whose expiry is at or before `now`, taking them from the expiry heap (stale entries are
   * dropped on the way), each as a delete in the engine; returns how many entries it took (removed or stale).
   */
  expireDue(now: number, max: number): number {
    if (this.closed || (this.persistence !== null && this.persistence.failure !== undefined)) return 0;
    // A key's writes still owed by a crash open come before its expiry (the record may be other than the heap says).
    this.settle();
    const store = this.store;
    const heap = store.expiries;
    let n = 0;
    while (n < max && heap.next <= now) {
      const key = store.expiredKeyAt(heap.nextLocation, now);
      heap.pop();
      n++;
      if (key === null) continue;
      // The engine's delete first: it copies the key, which the removal frees.
      if (this.persistence === null) this.counter++;
      else this.persistence.del(key.subarray(1));
      store.removeExpired(key);
    }
    return n;
  }

  /**
   * The version of `key` as reads see it (ABSENT: absent or expired), its owed writes first. Throws
   * INVALID_ARGUMENT (key of the wrong kind).
   */
  versionOf(key: MapKey): number {
    if (this.pending !== null) this.owe(key);
    return this.store.versionOf(key);
  }

  /** Throws VERSION_MISMATCH unless `key`'s version is `check` (ABSENT: unless it is absent). */
  private check(key: MapKey, check: number): void {
    const current = this.store.versionOf(key);
    if (current !== check) throw new VersionMismatchError(key, check, current === ABSENT ? null : current);
  }

  /** Stores `bytes` under `key` with the next version, in memory then in the engine; returns the version. */
  private put(key: MapKey, bytes: Uint8Array, expiresAt: number): number {
    const version = this.nextVersion(this.unsavedStructures);
    const loc = this.store.put(key, bytes, bytes.length, version, expiresAt);
    if (this.persistence !== null) this.persist(loc, version, expiresAt);
    return version;
  }

  /**
   * The version of the next write (FORMAT.md §12): for a persisted map the engine sequence the write will get —
   * the engine numbers writes synchronously in call order, one sequence per entry, and the structure table, when it
   * goes first (`structuresFirst`), takes one — else the map's own counter, advanced.
   */
  private nextVersion(structuresFirst: boolean): number {
    if (this.persistence !== null) return this.persistence.engine.lastSequence + (structuresFirst ? 2 : 1);
    return ++this.counter;
  }

  /**
   * Resolves when every write so far is durable at the map's `sync` level (at once for a memory-only map), one call
   * in DURABLE_YIELD_EVERY an event-loop turn later. Rejects with PERSIST_FAILED once an engine write failed.
   */
  durable(): Promise<void> {
    const done = this.persistence === null ? Promise.resolve() : this.persistence.durable();
    // Writes that need no fdatasync are durable once their write(2) returned, which a later microtask reports, and a
    // memory-only map has nothing to wait for: a loop awaiting durable() would never leave the microtask queue, and
    // timers and I/O would wait for the whole loop. One call in DURABLE_YIELD_EVERY also waits an event-loop turn.
    if (++this.durableCalls < DURABLE_YIELD_EVERY) return done;
    this.durableCalls = 0;
    return done.then(nextTurn);
  }

  /**
   * Applies a batch's operations (checked as they were added) in order to the memory and, for a persisted map,
   * writes them to the engine as one atomic batch, first the structure table if the engine lacks it.
   */
  commit(ops: BatchOps, options: BatchWriteOptions | undefined): Promise<BatchResult> {
    this.checkWritable();
    for (let i = 0, n = ops.checkCount; i < n; i++) {
      const key = ops.checkKeys[i]!;
      if (this.pending !== null) this.owe(key);
      this.check(key, ops.checkVersions[i]!);
    }
    if (this.codec.takeGrown()) {
      // The batch's values were encoded as it was filled: readers learn their structures before any can be seen.
      this.sharing.publish();
      this.unsavedStructures = true;
    }
    const { spans, keys, buf } = ops;
    const persistence = this.persistence;
    // The engine gives the batch's entries consecutive sequences, the structure table (when it lacks it) first.
    const base = persistence === null ? this.counter + 1 : this.nextVersion(this.unsavedStructures);
    if (persistence === null) this.counter += ops.count;
    if (this.pages !== null && ops.count >= BULK_POPULATE_MIN_WRITES) this.preparePages(ops);
    for (let i = 0, n = ops.count; i < n; i++) {
      const at = i * SPAN;
      const kind = spans[at]!;
      const ks = spans[at + 1]!;
      const ke = spans[at + 2]!;
      const vs = spans[at + 3]!;
      const ve = spans[at + 4]!;
      if (kind === SET || kind === DELETE) {
        this.pending?.foldBytes(buf, ks + 1, ke - ks - 1);
        const key: MapKey = keys[i] ?? buf.subarray(ks + 1, ke);
        if (kind === SET) {
          ops.setVersion(i, base + i);
          this.store.put(key, buf.subarray(vs, ve), ve - vs, base + i, ops.expiresAt(i));
        } else this.store.delete(key);
      } else if (persistence === null) {
        this.memoryMeta.apply(keys[i]!, kind === SET_META ? buf.subarray(vs, ve) : null);
      }
    }
    if (this.pending?.done === true) this.pending = null;
    if (persistence === null) return Promise.resolve({ sequence: undefined });
    const batch = persistence.newBatch(this.takeStructures());
    for (let i = 0, n = ops.count; i < n; i++) {
      const at = i * SPAN;
      const kind = spans[at]!;
      const key = buf.subarray(spans[at + 1]!, spans[at + 2]!);
      // A set's engine value is its stored header (between the key and the value bytes) and the value.
      if (kind === SET || kind === SET_META) batch.put(key, buf.subarray(spans[at + 2]!, spans[at + 4]!));
      else batch.del(key);
    }
    return persistence.writeBatch(batch, options?.sync === true);
  }

  /**
   * Records the record at `loc` (just written in place, as a struct view does) as a new write: a new version, and the
   * engine's copy if the map is persisted.
   */
  written(loc: number): void {
    const arena = this.store.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const version = this.nextVersion(this.unsavedStructures);
    arena.setVersion(seg, off, version);
    if (this.persistence !== null) this.persist(loc, version, arena.expiresAt(seg, off));
  }

  /** Throws CLOSED after `close()`, PERSIST_FAILED once an engine write failed. */
  checkWritable(): void {
    if (this.closed) throw closedError('map');
    if (this.persistence !== null && this.persistence.failure !== undefined) {
      throw new OffHeapError(
        OffHeapErrorCodes.PERSIST_FAILED,
        'an earlier engine write failed; the map refuses writes',
        {
          cause: this.persistence.failure,
        },
      );
    }
  }

  /**
   * Before a read or write of `key`: its writes still owed by a crash open, into the map. A key of the wrong kind is
   * left to the lookup after, which throws INVALID_ARGUMENT.
   */
  owe(key: MapKey): void {
    const p = this.pending;
    if (p === null) return;
    if (typeof key === 'string') {
      if (this.keysAreStrings) p.foldString(key, this.hasher);
    } else if (key instanceof Uint8Array && !this.keysAreStrings) p.foldBytes(key, 0, key.length);
    if (p.done) this.pending = null;
  }

  /** Before what sees the whole map: every write still owed by a crash open, into the map. */
  settle(): void {
    if (this.pending === null) return;
    this.pending.settle();
    this.pending = null;
  }

  /** No write is taken after this (CLOSED); the replay of owed writes stops. */
  close(): void {
    this.closed = true;
    this.pending?.stop();
  }

  /**
   * At close, once the engine has every write: the owed writes into the memory, so that the image written then holds
   * them. Throws what a replay throws (the image is then not written).
   */
  finish(): void {
    this.pending?.settle();
  }

  /** The structure table for the engine's next write, when it grew since the engine last got it; else null. */
  private takeStructures(): Structures | null {
    if (!this.unsavedStructures) return null;
    this.unsavedStructures = false;
    return this.codec.structures();
  }

  /**
   * Writes the record at `loc` to the engine, of `version` and `expiresAt`, with the structure table if it grew since
   * the engine last got it.
   */
  private persist(loc: number, version: number, expiresAt: number): void {
    const arena = this.store.arena;
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const u8 = arena.u8[seg]!;
    const kstart = off + RECORD_HEADER_BYTES;
    const vstart = kstart + arena.keyLength(seg, off);
    this.persistence!.put(
      u8.subarray(kstart, vstart),
      u8.subarray(vstart, vstart + arena.valueLength(seg, off)),
      version,
      expiresAt,
      this.takeStructures(),
    );
  }

  /** Copies in bulk the image pages a batch's sets and deletes will write (image-pages.ts). */
  private preparePages(ops: BatchOps): void {
    const { spans, buf } = ops;
    const n = ops.count;
    const planned = {
      count: 0,
      hashes: new Int32Array(n),
      keyLengths: new Int32Array(n),
      valueLengths: new Int32Array(n),
    };
    for (let i = 0; i < n; i++) {
      const kind = spans[i * SPAN]!;
      if (kind !== SET && kind !== DELETE) continue;
      const ks = spans[i * SPAN + 1]! + 1; // after the namespace byte
      const ke = spans[i * SPAN + 2]!;
      const c = planned.count++;
      planned.hashes[c] = hashBytes(buf, ks, ke - ks);
      planned.keyLengths[c] = ke - ks;
      planned.valueLengths[c] = kind === SET ? spans[i * SPAN + 4]! - spans[i * SPAN + 3]! : 0;
    }
    this.pages!.prepare(planned);
  }
}
