/**
 * Atomic batches of a map: sets, deletes and named metadata (map-meta.ts) applied to the map's memory and written to
 * its engine as ONE engine write batch (one WAL record, consecutive sequence numbers), so that after a crash the
 * engine holds all of a batch or none of it, and an open (scan or image + replay) rebuilds all or none.
 *
 * A batch checks and copies every operation as it is added (`set` encodes the value then), so that `write` meets no
 * bad input: it applies the operations in order to the index and arena, then hands the engine one batch built from
 * the batch's own copies (never from the arena: a later operation of the same batch may overwrite or free the
 * record an earlier one wrote). Operations are kept in one growing buffer, each as its engine key (namespace byte,
 * then the key or the metadata name) followed by its value:
 *
 *   buf   = ( engineKey | value )*          engineKey = NS_DATA key-bytes | NS_USER_META name-utf8
 *   spans = ( kind, keyStart, keyEnd, valueEnd )* one entry of four numbers per operation
 *
 * Readers in other threads (shared maps) see each key's change atomically, as every write, but not the batch as a
 * whole: while `write` runs, a reader's two gets may see one key after the batch and another before it. Their reads
 * are not a snapshot across keys in any case (shared/offheap-reader.ts); a batch never tears a single value.
 */
import type { Structures } from '../codec/msgpack-codec.js';
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { hashBytes, illFormedKey, utf8Length, writeUtf8 } from '../key-bytes.js';
import { MAX_RECORD_BYTES, recordBytes } from '../memory/arena.js';
import { type MapPersistence, NS_DATA, NS_USER_META } from '../persist/persistence.js';
import { BULK_POPULATE_MIN_WRITES, type ImagePages } from './image-pages.js';
import type { MapCodec } from './map-codec.js';
import type { MapIndex } from './map-index.js';
import { checkMetaValue, type MemoryMetadata, metaNameLength } from './map-meta.js';
import { MAX_KEY_BYTES, type MapKey } from './map-options.js';
import type { MapStore } from './map-store.js';
import type { PendingSuffix } from './pending-suffix.js';

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

const SET = 0;
const DELETE = 1;
const SET_META = 2;
const DELETE_META = 3;
/** First size of a batch's buffer; it doubles as operations need. */
const INITIAL_BYTES = 4096;

/** The map's parts a batch is applied to (see OffHeapMap). */
export interface BatchTarget {
  readonly index: MapIndex;
  readonly store: MapStore;
  readonly persistence: MapPersistence | null;
  readonly memoryMeta: MemoryMetadata;
  /** The writes a crash open still owes the map (pending-suffix.ts): each key's go in before the batch's. */
  readonly pending: PendingSuffix | null;
  /** A mapped image's pages, copied in bulk before a large batch writes them (image-pages.ts), else null. */
  readonly pages: ImagePages | null;
}

/**
 * A batch of operations on one map, from `map.batch()`: add with `set`, `setBytes`, `delete`, `setMeta`,
 * `deleteMeta` (each checks and copies its arguments, and throws at once on bad input, leaving the batch as it
 * was), then `write()`. Operations apply in the order added (a later one on the same key wins). A batch can be
 * reused after `write` (it is left empty) or emptied with `clear`. Not for use across threads.
 */
export class MapBatch<K extends MapKey = string, V = unknown> {
  /** Four numbers per operation: kind, start and end of its engine key in `buf`, end of its value. */
  private readonly spans: number[] = [];
  /** Per operation: the key as given (a string key; null for a byte key, read back from `buf`), or the name. */
  private readonly keys: (string | null)[] = [];
  private buf: Buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  private used = 0;

  /** `commit` applies the batch to its map (OffHeapMap's); `codec` encodes `set`'s values. */
  constructor(
    private readonly codec: MapCodec,
    private readonly keysAreStrings: boolean,
    private readonly commit: (batch: MapBatch<K, V>, options: BatchWriteOptions | undefined) => Promise<BatchResult>,
  ) {}

  /** Operations in the batch. */
  get length(): number {
    return this.keys.length;
  }

  /**
   * Adds a set of `key` to `value`, encoded now by the map's codec. Throws INVALID_ARGUMENT (key of the wrong kind
   * or ill-formed), KEY_TOO_LARGE, VALUE_TOO_LARGE, ENCODE_FAILED / FIELD_OVERFLOW; the batch is then unchanged.
   */
  set(key: K, value: V): this {
    const klen = this.keyLength(key);
    const bytes = this.codec.encode(value);
    return this.add(SET, key, klen, bytes);
  }

  /** Adds a set of `key` to the value bytes `bytes` as they are (a struct map's must be one record). As `set`. */
  setBytes(key: K, bytes: Uint8Array): this {
    const klen = this.keyLength(key);
    this.codec.checkBytes(bytes);
    return this.add(SET, key, klen, bytes);
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
    this.spans.length = 0;
    this.keys.length = 0;
    this.used = 0;
    return this;
  }

  /**
   * Applies every operation to the map's memory and, for a persisted map, writes them to the engine as one atomic
   * batch, before returning; then empties the batch. The promise resolves with the batch's engine sequence once
   * the batch is durable at the map's level (with `sync`, once fsynced); it rejects with CLOSED or PERSIST_FAILED
   * (nothing applied: an earlier engine write failed), or PERSIST_FAILED if this batch's engine write failed.
   */
  write(options?: BatchWriteOptions): Promise<BatchResult> {
    let result: Promise<BatchResult>;
    try {
      result = this.commit(this, options);
    } catch (err) {
      return Promise.reject(err);
    }
    this.clear();
    return result;
  }

  /**
   * Applies the operations to `target` (the map's parts) and, for a persisted map, writes them with `structures`
   * (the msgpackr structure table, when it grew and the engine has not got it yet) first, in one engine batch.
   * Called by the map after it checked it is writable.
   * @internal the map's, through `write`.
   */
  apply(target: BatchTarget, structures: Structures | null, sync: boolean): Promise<BatchResult> {
    const { spans, keys } = this;
    const buf = this.buf;
    const persistence = target.persistence;
    if (target.pages !== null && keys.length >= BULK_POPULATE_MIN_WRITES) this.preparePages(target.pages);
    for (let i = 0, n = keys.length; i < n; i++) {
      const kind = spans[i * 4]!;
      const ks = spans[i * 4 + 1]!;
      const ke = spans[i * 4 + 2]!;
      const ve = spans[i * 4 + 3]!;
      if (kind === SET || kind === DELETE) {
        target.pending?.foldBytes(buf, ks + 1, ke - ks - 1);
        const key: MapKey = keys[i] ?? buf.subarray(ks + 1, ke);
        if (kind === SET) target.store.put(key, buf.subarray(ke, ve), ve - ke);
        else {
          const slot = target.index.find(key);
          if (slot >= 0) target.store.remove(slot);
        }
      } else if (persistence === null) {
        target.memoryMeta.apply(keys[i]!, kind === SET_META ? buf.subarray(ke, ve) : null);
      }
    }
    if (persistence === null) return Promise.resolve({ sequence: undefined });
    const batch = persistence.newBatch(structures);
    for (let i = 0, n = keys.length; i < n; i++) {
      const kind = spans[i * 4]!;
      const key = buf.subarray(spans[i * 4 + 1]!, spans[i * 4 + 2]!);
      if (kind === SET || kind === SET_META) batch.put(key, buf.subarray(spans[i * 4 + 2]!, spans[i * 4 + 3]!));
      else batch.del(key);
    }
    return persistence.writeBatch(batch, sync);
  }

  /** Copies in bulk the image pages this batch's sets and deletes will write (image-pages.ts). */
  private preparePages(pages: ImagePages): void {
    const { spans, buf } = this;
    const n = this.keys.length;
    const planned = {
      count: 0,
      hashes: new Int32Array(n),
      keyLengths: new Int32Array(n),
      valueLengths: new Int32Array(n),
    };
    for (let i = 0; i < n; i++) {
      const kind = spans[i * 4]!;
      if (kind !== SET && kind !== DELETE) continue;
      const ks = spans[i * 4 + 1]! + 1; // after the namespace byte
      const ke = spans[i * 4 + 2]!;
      const c = planned.count++;
      planned.hashes[c] = hashBytes(buf, ks, ke - ks);
      planned.keyLengths[c] = ke - ks;
      planned.valueLengths[c] = kind === SET ? spans[i * 4 + 3]! - ke : 0;
    }
    pages.prepare(planned);
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

  /** Appends one operation: its engine key (namespace byte, then `key`'s `klen` bytes), then `value`'s bytes. */
  private add(kind: number, key: MapKey, klen: number, value: Uint8Array | null): this {
    const vlen = value === null ? 0 : value.length;
    if (kind === SET && recordBytes(klen, vlen) > MAX_RECORD_BYTES) {
      throw new OffHeapError(
        OffHeapErrorCodes.VALUE_TOO_LARGE,
        `record of ${recordBytes(klen, vlen)} bytes exceeds the ${MAX_RECORD_BYTES}-byte limit`,
      );
    }
    const start = this.used;
    this.reserve(1 + klen + vlen);
    const buf = this.buf;
    buf[start] = kind === SET || kind === DELETE ? NS_DATA : NS_USER_META;
    if (typeof key === 'string') writeUtf8(key, buf, start + 1);
    else buf.set(key, start + 1);
    const keyEnd = start + 1 + klen;
    if (value !== null) buf.set(value, keyEnd);
    this.used = keyEnd + vlen;
    this.spans.push(kind, start, keyEnd, this.used);
    this.keys.push(typeof key === 'string' ? key : null);
    return this;
  }

  private reserve(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.used + n, this.buf.length * 2));
    this.buf.copy(next, 0, 0, this.used);
    this.buf = next;
  }
}
