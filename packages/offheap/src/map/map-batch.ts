/**
 * Atomic batches of a map: sets, deletes and named metadata (map-meta.ts) applied to the map's memory and written to
 * its engine as ONE engine write batch (one WAL record, consecutive sequence numbers), so that after a crash the
 * engine holds all of a batch or none of it, and an open (scan or image + replay) rebuilds all or none.
 *
 * A batch only collects: it checks and copies every operation as it is added (`set` encodes the value then), so
 * that the commit meets no bad input. `write` hands the operations to the map's write core (map-writer.ts), which
 * applies them in order to the index and arena, then hands the engine one batch built from the batch's own copies
 * (never from the arena: a later operation of the same batch may overwrite or free the record an earlier one
 * wrote). Operations are kept in one growing buffer, each as its engine key (namespace byte, then the key or the
 * metadata name) followed by its engine value — for a set, the stored value's header (persist/stored-value.ts,
 * whose version is filled in at commit, when the engine sequence is known) then the value bytes:
 *
 *   buf   = ( engineKey | header? | value )*   engineKey = NS_DATA key-bytes | NS_USER_META name-utf8
 *   spans = ( kind, keyStart, keyEnd, valueStart, valueEnd )* one entry of five numbers per operation
 *
 * Checks (`check`) are kept apart, as the key and the version it must have; the commit tests them all before it
 * applies anything, so that a batch whose check fails writes nothing.
 *
 * Readers in other threads (shared maps) see each key's change atomically, as every write, but not the batch as a
 * whole: while `write` runs, a reader's two gets may see one key after the batch and another before it. Their reads
 * are not a snapshot across keys in any case (shared/offheap-reader.ts); a batch never tears a single value.
 */
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { illFormedKey, utf8Length, writeUtf8 } from '../key-bytes.js';
import { MAX_RECORD_BYTES, NO_EXPIRY, recordBytes } from '../memory/arena.js';
import { NS_DATA, NS_USER_META } from '../persist/persistence.js';
import { STORED_VERSION_AT, storedHeaderBytes, writeStoredHeader } from '../persist/stored-value.js';
import type { MapCodec } from './map-codec.js';
import { checkMetaValue, metaNameLength } from './map-meta.js';
import { type ExpiryOptions, MAX_KEY_BYTES, type MapKey } from './map-options.js';
import { checkOf, expiresAtOf } from './map-store.js';

/** What a batch's `write` resolves to. */
export interface BatchResult {
  /**
   * The engine sequence number of the batch's last entry (every entry of the batch has a sequence at most this, and
   * every later write a greater one); for an empty batch, the engine's last sequence. Undefined for a memory-only
   * map, which has no engine.
   */
  readonly sequence: number | undefined;
}

/** Options of `MapBatch.write`. */
export interface BatchWriteOptions {
  /** Resolve only once the batch is fsynced (survives power loss), whatever the map's `sync` level. */
  sync?: boolean;
}

/** The kinds of operation, as `BatchOps.spans` holds them. */
export const SET = 0;
export const DELETE = 1;
export const SET_META = 2;
export const DELETE_META = 3;
/** Numbers per operation in `BatchOps.spans`. */
export const SPAN = 5;
/** First size of a batch's buffer; it doubles as operations need. */
const INITIAL_BYTES = 4096;

/**
 * A batch's operations, as it hands them over to be committed: `count` of them, the i-th of kind `spans[5i]`, with
 * its engine key in `buf[spans[5i+1], spans[5i+2])`, its engine value up to `spans[5i+4]` of which the value bytes
 * start at `spans[5i+3]`, and its key as given in `keys[i]` (a string key or a metadata name; null for a byte key,
 * read back from `buf`); and `checkCount` checks, the key `checkKeys[j]` to have the version `checkVersions[j]`
 * (ABSENT: to be absent).
 */
export class BatchOps {
  readonly spans: number[] = [];
  readonly keys: (string | null)[] = [];
  readonly checkKeys: MapKey[] = [];
  readonly checkVersions: number[] = [];
  /** The expiry of each operation (NO_EXPIRY: none, or not a set). */
  private readonly expiries: number[] = [];
  private bytes: Buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  private used = 0;

  get count(): number {
    return this.keys.length;
  }

  get checkCount(): number {
    return this.checkKeys.length;
  }

  /** The engine keys and values (valid until the next `add`: a growth moves them). */
  get buf(): Buffer {
    return this.bytes;
  }

  clear(): void {
    this.spans.length = 0;
    this.keys.length = 0;
    this.expiries.length = 0;
    this.checkKeys.length = 0;
    this.checkVersions.length = 0;
    this.used = 0;
  }

  /**
   * Appends one operation: its engine key (namespace byte, then `key`'s `klen` bytes), then for a set the stored
   * header of `expiresAt`, then `value`'s bytes.
   */
  add(kind: number, key: MapKey, klen: number, value: Uint8Array | null, expiresAt: number): void {
    const vlen = value === null ? 0 : value.length;
    const header = kind === SET ? storedHeaderBytes(expiresAt) : 0;
    const start = this.used;
    this.reserve(1 + klen + header + vlen);
    const buf = this.bytes;
    buf[start] = kind === SET || kind === DELETE ? NS_DATA : NS_USER_META;
    if (typeof key === 'string') writeUtf8(key, buf, start + 1);
    else buf.set(key, start + 1);
    const keyEnd = start + 1 + klen;
    const valueStart = kind === SET ? writeStoredHeader(buf, keyEnd, 0, expiresAt) : keyEnd;
    if (value !== null) buf.set(value, valueStart);
    this.used = valueStart + vlen;
    this.spans.push(kind, start, keyEnd, valueStart, this.used);
    this.keys.push(typeof key === 'string' ? key : null);
    this.expiries.push(kind === SET ? expiresAt : NO_EXPIRY);
  }

  /** Adds a check that `key` (a byte key is copied) has `version` (ABSENT: is absent). */
  addCheck(key: MapKey, version: number): void {
    this.checkKeys.push(typeof key === 'string' ? key : key.slice());
    this.checkVersions.push(version);
  }

  /** The expiry of operation `i`. */
  expiresAt(i: number): number {
    return this.expiries[i]!;
  }

  /** Writes `version` into the stored header of set `i`, before the engine gets it. */
  setVersion(i: number, version: number): void {
    this.bytes.writeDoubleLE(version, this.spans[i * SPAN + 2]! + STORED_VERSION_AT);
  }

  private reserve(n: number): void {
    if (this.used + n <= this.bytes.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.used + n, this.bytes.length * 2));
    this.bytes.copy(next, 0, 0, this.used);
    this.bytes = next;
  }
}

/** A check of a batch (`MapBatch.check`): the key's version, or that it is absent. */
export type VersionCheck<K extends MapKey = string> =
  | { readonly key: K; readonly version: number }
  | { readonly key: K; readonly absent: true };

/** Where a batch's `write` goes: the map's write core (map-writer.ts), which applies and persists the operations. */
export interface BatchCommitter {
  /**
   * Applies `ops` to the map's memory and, for a persisted map, writes them to its engine as one atomic batch,
   * before returning; the promise resolves once they are durable. Throws what `MapBatch.write` rejects with.
   */
  commit(ops: BatchOps, options: BatchWriteOptions | undefined): Promise<BatchResult>;
}

/**
 * A batch of operations on one map, from `map.batch()`: add with `set`, `setBytes`, `delete`, `setMeta`,
 * `deleteMeta` (each checks and copies its arguments, and throws at once on bad input, leaving the batch as it
 * was), then `write()`. Operations apply in the order added (a later one on the same key wins). A batch can be
 * reused after `write` (it is left empty) or emptied with `clear`. Not for use across threads.
 */
export class MapBatch<K extends MapKey = string, V = unknown> {
  private readonly ops = new BatchOps();

  /**
   * `committer` applies the batch to its map (the map's write core); `codec` encodes `set`'s values; `now` is the
   * map's clock, from which a `ttl` is counted when the operation is added.
   */
  constructor(
    private readonly codec: MapCodec,
    private readonly keysAreStrings: boolean,
    private readonly committer: BatchCommitter,
    private readonly now: () => number,
  ) {}

  /** Operations in the batch. */
  get length(): number {
    return this.ops.count;
  }

  /**
   * Adds a set of `key` to `value`, encoded now by the map's codec. Throws INVALID_ARGUMENT (key of the wrong kind
   * or ill-formed, a bad `ttl`/`expiresAt`), KEY_TOO_LARGE, VALUE_TOO_LARGE, ENCODE_FAILED / FIELD_OVERFLOW; the
   * batch is then unchanged. `options`: when the key expires (`ttl` counted from now).
   */
  set(key: K, value: V, options?: ExpiryOptions): this {
    const klen = this.keyLength(key);
    const expiresAt = options === undefined ? NO_EXPIRY : expiresAtOf(options, this.now());
    const bytes = this.codec.encode(value);
    return this.add(SET, key, klen, bytes, expiresAt);
  }

  /** Adds a set of `key` to the value bytes `bytes` as they are (a struct map's must be one record). As `set`. */
  setBytes(key: K, bytes: Uint8Array, options?: ExpiryOptions): this {
    const klen = this.keyLength(key);
    const expiresAt = options === undefined ? NO_EXPIRY : expiresAtOf(options, this.now());
    this.codec.checkBytes(bytes);
    return this.add(SET, key, klen, bytes, expiresAt);
  }

  /**
   * Adds a check: the batch is written only if, when `write` is called, `key` has `check.version` (or, with
   * `check.absent`, is absent or expired); else `write` rejects with VERSION_MISMATCH and nothing of the batch is
   * written. Throws INVALID_ARGUMENT (key of the wrong kind or ill-formed, a version that is not a non-negative
   * integer, neither or both of `version` and `absent`), KEY_TOO_LARGE.
   */
  check(check: VersionCheck<K>): this {
    if (typeof check !== 'object' || check === null) throw invalidArgument('check needs { key, version | absent }');
    this.keyLength(check.key);
    const { version, absent } = check as { version?: unknown; absent?: unknown };
    if (absent === undefined ? version === undefined : absent !== true || version !== undefined) {
      throw invalidArgument('a check takes either a version or absent: true');
    }
    this.ops.addCheck(check.key, checkOf({ ifVersion: version, ifAbsent: absent }));
    return this;
  }

  /** Adds a delete of `key` (no error at `write` if it is absent). Throws INVALID_ARGUMENT, KEY_TOO_LARGE. */
  delete(key: K): this {
    return this.add(DELETE, key, this.keyLength(key), null);
  }

  /**
   * Adds metadata `name` = `value` (copied; see `map.meta`). Throws INVALID_ARGUMENT / KEY_TOO_LARGE (name: a
   * non-empty string of at most 255 UTF-8 bytes), INVALID_ARGUMENT / VALUE_TOO_LARGE (value: bytes, at most 64 KiB).
   */
  setMeta(name: string, value: Uint8Array): this {
    const n = metaNameLength(name);
    checkMetaValue(value);
    return this.add(SET_META, name, n, value);
  }

  /** Adds the removal of metadata `name`. Throws as `setMeta` for the name. */
  deleteMeta(name: string): this {
    return this.add(DELETE_META, name, metaNameLength(name), null);
  }

  /** Empties the batch. Returns it. */
  clear(): this {
    this.ops.clear();
    return this;
  }

  /**
   * Applies every operation to the map's memory and, for a persisted map, writes them to the engine as one atomic
   * batch, before returning; then empties the batch. The promise resolves with the batch's engine sequence once
   * the batch is durable at the map's level (with `sync`, once fsynced); it rejects with CLOSED or PERSIST_FAILED
   * (nothing applied: an earlier engine write failed), VERSION_MISMATCH (a check failed: nothing applied, the batch
   * left as it was), or PERSIST_FAILED if this batch's engine write failed. The i-th set of the batch gets the
   * version `sequence` − (operations − 1 − i) (every operation takes one).
   */
  write(options?: BatchWriteOptions): Promise<BatchResult> {
    let result: Promise<BatchResult>;
    try {
      result = this.committer.commit(this.ops, options);
    } catch (err) {
      return Promise.reject(err);
    }
    this.clear();
    return result;
  }

  /** The UTF-8 (or byte) length of `key`; throws INVALID_ARGUMENT (wrong kind, ill-formed), KEY_TOO_LARGE. */
  private keyLength(key: K): number {
    let n: number;
    if (this.keysAreStrings) {
      if (typeof key !== 'string') throw invalidArgument(`this map has string keys, got ${typeof key}`);
      if (!key.isWellFormed()) throw illFormedKey(key);
      n = utf8Length(key);
    } else {
      if (!(key instanceof Uint8Array)) throw invalidArgument('this map has Uint8Array keys');
      n = key.length;
    }
    if (n > MAX_KEY_BYTES)
      throw new OffHeapError(OffHeapErrorCodes.KEY_TOO_LARGE, `key of ${n} bytes exceeds ${MAX_KEY_BYTES}`);
    return n;
  }

  /** Appends one operation, after the check of a set's record size. */
  private add(kind: number, key: MapKey, klen: number, value: Uint8Array | null, expiresAt = NO_EXPIRY): this {
    const vlen = value === null ? 0 : value.length;
    const bytes = recordBytes(klen, vlen, expiresAt !== NO_EXPIRY);
    if (kind === SET && bytes > MAX_RECORD_BYTES) {
      throw new OffHeapError(
        OffHeapErrorCodes.VALUE_TOO_LARGE,
        `record of ${bytes} bytes exceeds the ${MAX_RECORD_BYTES}-byte limit`,
      );
    }
    this.ops.add(kind, key, klen, value, expiresAt);
    return this;
  }
}
