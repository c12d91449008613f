import {
  DEFAULT_MAX_BATCH_OPS,
  deleteOp,
  HeaplessError,
  type KvActor as KvActorMethods,
  type KvBatchOp,
  type KvBatchOptions,
  type KvBatchResult,
  type KvCheckpoint,
  type KvScanOptions,
  type KvScanPage,
  type KvStats,
  type KvWatchOptions,
  type KvWriteOptions,
  setOp,
  type WriteOp,
} from '@heapless/client/protocol';
import type { MapBatch, MapCheckpoint, OffHeapMap } from '@heapless/offheap';
import { Actor } from '../runtime/actor.js';
import { detach } from '../runtime/detach.js';
import { packageWireCode } from '../server/wire-error.js';
import { checkpointDirectory, removeCheckpointDirectory } from './kv-checkpoint.js';
import { checkMetaName, checkMetaValue, illFormed } from './kv-checks.js';
import { KvLimits } from './kv-limits.js';
import { type KvWatch, KvWatchHub } from './kv-watch.js';
import type { WriteSink } from './write-sink.js';

/** 1 KiB: keys are names, not data; long ones cost index probes and every log line that names them. */
const DEFAULT_MAX_KEY_BYTES = 1024;
/** 1 MiB: a value must fit comfortably in one frame (16 MiB) and one arena segment. */
const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
/**
 * 1 MiB, the server's default per-connection bound on replies not yet read (`maxReplyBytes`): a `getMany` reply is
 * then no larger than the largest single `get` reply, so the memory one connection can hold stays what it is for
 * `get`s. Without it, a getMany of a thousand 1 MiB values built a 1 GB reply before the frame limit refused it.
 */
const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;
/** What a value adds to the encoded reply besides its bytes: a msgpack bin32 header (nil, for a miss, is 1 byte). */
const BIN_HEADER_BYTES = 5;

/** Options of {@link KvActor}. */
export interface KvActorOptions {
  /**
   * Whether the map persists (it came from `OffHeapMap.open`); default true. A write is answered once it is durable
   * at the map's level (in the WAL, or fsynced for a map opened with `sync`); on a memory-only map at once, and
   * `sync` writes are refused there rather than acknowledged as durable when they are not.
   */
  persistent?: boolean;
  /** Default 1 KiB (UTF-8 bytes). */
  maxKeyBytes?: number;
  /** Default 1 MiB. */
  maxValueBytes?: number;
  /**
   * A `getMany` whose values (with their msgpack headers) would take more than this many bytes is refused with
   * `RESULT_TOO_LARGE` (one value alone is always answered, as by `get`); default 1 MiB.
   */
  maxResultBytes?: number;
  /**
   * A scan page ends early once its keys and values take this many bytes (it always holds one entry), so that its
   * reply fits one frame; default 4 MiB (a quarter of the default 16 MiB frame).
   */
  maxPageBytes?: number;
  /** Operations (sets, deletes and metadata names together) in one `batch` or `setMany`; default 10,000. */
  maxBatchOps?: number;
  /**
   * The directory under which `checkpoint(name)` writes checkpoints (an operator's setting: callers name a
   * checkpoint, never a path outside it). Without it, `checkpoint` is refused with FORBIDDEN.
   */
  checkpointRoot?: string;
  /** Bytes of memory a watch may hold (what its sink keeps, its queue) before it ends with WATCH_OVERFLOW; default 1 MiB (kv-watch.ts). */
  maxWatchBytes?: number;
  /**
   * Watches open at once on this store, over every connection; one more is refused with TOO_MANY_STREAMS, so that
   * watchers together hold at most this many times `maxWatchBytes`. Default 1,024 (kv-watch.ts).
   */
  maxWatches?: number;
  /**
   * How long the store keeps its recent changes in memory for resuming watchers after the last watch ended (ms);
   * default 5,000 (kv-watch.ts LINGER_MS), 0 to let them go at once.
   */
  watchLingerMs?: number;
  /**
   * Send `set`, `delete`, `setMany` and `batch` to this sink (a following server's change log) instead of writing
   * the map, and reply once the sink resolves; metadata writes are then FORBIDDEN (a follower's metadata is its
   * own). See write-sink.ts.
   */
  writeSink?: WriteSink;
  /** What `onStop` runs instead of closing the map (the owner of a follower's map closes it). */
  close?: () => Promise<void>;
}

// The method shapes are defined once, in the client (what `connect<KvActor>` types against); these names keep the
// server's own exports.
/** Per-write options. */
export type WriteOptions = KvWriteOptions;
/** What `scan` selects. */
export type ScanOptions = KvScanOptions;
/** One page of `scan`. */
export type ScanPage = KvScanPage;

const DEFAULT_SCAN_LIMIT = 100;
const MAX_SCAN_LIMIT = 10_000;
const DEFAULT_MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * The key-value actor: string keys, values stored as the bytes the client sent (msgpack the client encoded once, or
 * a struct layout) and returned as they are, so the server never decodes or re-encodes a value. It owns its map and
 * closes it in `onStop()`.
 *
 * Errors: `BAD_ARGUMENTS` (a key that is not a string or not well-formed UTF-16, a value that is not bytes),
 * `KEY_TOO_LARGE`, `VALUE_TOO_LARGE`, `RESULT_TOO_LARGE` (a getMany past `maxResultBytes`); failures of the map and its engine reach a remote caller with their storage
 * codes (`STORAGE_CORRUPTION`, `STORAGE_IO`, `STORAGE_CLOSED`, `STORAGE_PERSIST_FAILED`...; see wire-error.ts).
 */
export class KvActor extends Actor implements KvActorMethods {
  static override readonly exposed = [
    'get',
    'getMany',
    'set',
    'setMany',
    'delete',
    'has',
    'scan',
    'size',
    'stats',
    'flush',
    'batch',
    'getMeta',
    'setMeta',
    'deleteMeta',
    'checkpoint',
    'watch',
  ] as const;
  /** The exposed methods whose call opens a stream (the server lists them in its hello). */
  static readonly streams = ['watch'] as const;
  readonly #map: OffHeapMap<string, unknown>;
  readonly #persistent: boolean;
  readonly #limits: KvLimits;
  readonly #maxPageBytes: number;
  readonly #maxResultBytes: number;
  readonly #checkpointRoot: string | undefined;
  readonly #maxWatchBytes: number | undefined;
  readonly #maxWatches: number | undefined;
  readonly #watchLingerMs: number | undefined;
  #watches: KvWatchHub | null = null;
  readonly #sink: WriteSink | undefined;
  readonly #close: () => Promise<void>;

  constructor(map: OffHeapMap<string, unknown>, opts: KvActorOptions = {}) {
    super();
    this.#map = map;
    this.#persistent = opts.persistent ?? true;
    this.#maxPageBytes = opts.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES;
    this.#maxResultBytes = opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.#checkpointRoot = opts.checkpointRoot;
    this.#maxWatchBytes = opts.maxWatchBytes;
    this.#maxWatches = opts.maxWatches;
    this.#watchLingerMs = opts.watchLingerMs;
    this.#sink = opts.writeSink;
    const maxBatchOps = opts.maxBatchOps ?? DEFAULT_MAX_BATCH_OPS;
    this.#limits = new KvLimits({
      maxKeyBytes: opts.maxKeyBytes ?? DEFAULT_MAX_KEY_BYTES,
      maxValueBytes: opts.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES,
      maxBatchOps: this.#sink === undefined ? maxBatchOps : Math.min(maxBatchOps, this.#sink.maxOps),
    });
    this.#close = opts.close ?? (() => this.#map.close());
  }

  /** The stored bytes of `key`'s value, or undefined. */
  get(key: string): Uint8Array | undefined {
    this.#limits.checkKey(key);
    return this.#map.getBytes(key);
  }

  /**
   * The stored bytes of each key's value (undefined where missing), in the order of `keys`. Throws
   * `RESULT_TOO_LARGE` once the values read pass `maxResultBytes` (1 MiB): it stops reading there, so a request
   * for many large values costs at most that much memory; a single key is always answered.
   */
  getMany(keys: string[]): (Uint8Array | undefined)[] {
    if (!Array.isArray(keys)) throw new HeaplessError('BAD_ARGUMENTS', 'getMany(keys: string[])');
    const out = new Array<Uint8Array | undefined>(keys.length);
    let bytes = 0;
    for (let i = 0; i < keys.length; i++) {
      const v = this.get(keys[i]);
      bytes += v === undefined ? 1 : v.length + BIN_HEADER_BYTES;
      if (bytes > this.#maxResultBytes && i > 0) {
        throw new HeaplessError(
          'RESULT_TOO_LARGE',
          `getMany of ${keys.length} keys: the values of the first ${i + 1} take ${bytes} bytes, more than the ` +
            `${this.#maxResultBytes} of one reply; ask for fewer keys at a time`,
        );
      }
      out[i] = v;
    }
    return out;
  }

  /** Stores `value`'s bytes as they are under `key`; resolves once durable (fsynced with `sync`). */
  set(key: string, value: Uint8Array, opts?: WriteOptions): Promise<void> | undefined {
    this.#limits.checkKey(key);
    this.#limits.checkValue(value);
    const sync = this.#wantsSync(opts);
    if (this.#sink !== undefined) return detach(this.#toSink([setOp(key, value)]).then(() => undefined));
    this.#write(() => this.#map.setBytes(key, value));
    return this.#durable(sync);
  }

  /**
   * Stores every `[key, value]` pair in order as one atomic batch (see `batch`): after a crash, all of them or none.
   * Checks them all before writing any; `BATCH_TOO_LARGE` beyond `maxBatchOps` pairs.
   */
  setMany(entries: [string, Uint8Array][], opts?: WriteOptions): Promise<KvBatchResult> {
    if (!Array.isArray(entries)) throw new HeaplessError('BAD_ARGUMENTS', 'setMany(entries: [key, value][])');
    this.#limits.checkCount(entries.length, 'setMany');
    const sync = this.#wantsSync(opts);
    return this.#commitOps(this.#limits.setManyOps(entries), sync);
  }

  /**
   * Applies `ops` (sets and deletes, in order: a later one on the same key wins) and `opts.meta` (named metadata;
   * null removes a name) as one atomic batch: after a crash the store holds all of it or none, and readers of this
   * actor never see part of it (the actor runs one call at a time). Checks everything before writing anything.
   * Resolves with the batch's engine `sequence` once durable (fsynced with `sync`). Errors: `BAD_ARGUMENTS` (not
   * an array, an op of another shape, a meta name that is not a non-empty well-formed string, a meta value that is
   * neither bytes nor null), `KEY_TOO_LARGE` (key, or a meta name over 255 bytes), `VALUE_TOO_LARGE` (value, or a
   * meta value over 64 KiB), `BATCH_TOO_LARGE` (more than `maxBatchOps` ops and names), and the storage codes.
   */
  batch(ops: KvBatchOp[], opts?: KvBatchOptions): Promise<KvBatchResult> {
    if (!Array.isArray(ops)) throw new HeaplessError('BAD_ARGUMENTS', 'batch(ops: { type, key, value? }[], options?)');
    if (opts !== undefined && (typeof opts !== 'object' || opts === null || Array.isArray(opts))) {
      throw new HeaplessError('BAD_ARGUMENTS', 'batch: options is an object');
    }
    const meta = opts?.meta;
    if (
      meta !== undefined &&
      (typeof meta !== 'object' || meta === null || Array.isArray(meta) || meta instanceof Uint8Array)
    ) {
      throw new HeaplessError('BAD_ARGUMENTS', 'batch: options.meta is an object of name: bytes | null');
    }
    const names = meta === undefined ? [] : Object.keys(meta);
    this.#limits.checkCount(ops.length + names.length, 'batch');
    const sync = this.#wantsSync(opts);
    const checked = this.#limits.batchOps(ops);
    if (names.length === 0) return this.#commitOps(checked, sync);
    this.#refuseOnFollower('batch with meta');
    const b = this.#mapBatch(checked);
    for (const name of names) {
      const value = meta![name];
      checkMetaName(name);
      if (value === null) b.deleteMeta(name);
      else {
        checkMetaValue(value);
        b.setMeta(name, value);
      }
    }
    return this.#commit(b, sync);
  }

  /** The bytes of metadata `name`, or undefined. `BAD_ARGUMENTS` / `KEY_TOO_LARGE` for a bad name. */
  getMeta(name: string): Uint8Array | undefined {
    checkMetaName(name);
    return this.#map.meta.get(name);
  }

  /** Stores metadata `name` = `value` (a batch of one; see `batch`). */
  setMeta(name: string, value: Uint8Array, opts?: WriteOptions): Promise<KvBatchResult> {
    checkMetaName(name);
    checkMetaValue(value);
    this.#refuseOnFollower('setMeta');
    const sync = this.#wantsSync(opts);
    return this.#commit(this.#map.batch().setMeta(name, value), sync);
  }

  /** Removes metadata `name` (no error if it has none; a batch of one). */
  deleteMeta(name: string, opts?: WriteOptions): Promise<KvBatchResult> {
    checkMetaName(name);
    this.#refuseOnFollower('deleteMeta');
    const sync = this.#wantsSync(opts);
    return this.#commit(this.#map.batch().deleteMeta(name), sync);
  }

  /** Removes `key`; true if it was there. With `sync`, resolves once the removal is fsynced. */
  delete(key: string, opts?: WriteOptions): boolean | Promise<boolean> {
    this.#limits.checkKey(key);
    const sync = this.#wantsSync(opts);
    if (this.#sink !== undefined) {
      const had = this.#map.has(key); // as of now: writes before it in the log may still be on their way
      return detach(this.#toSink([deleteOp(key)]).then(() => had));
    }
    let had = false;
    this.#write(() => {
      had = this.#map.delete(key);
    });
    const d = this.#durable(sync);
    return d === undefined ? had : detach(d.then(() => had));
  }

  has(key: string): boolean {
    this.#limits.checkKey(key);
    return this.#map.has(key);
  }

  /**
   * One page of the keys selected by `opts`, with their values' bytes, in key order (UTF-8 byte order), at most
   * `limit` entries and about `maxPageBytes`. The cursor is the page's last key, so paging stays correct while keys
   * are added and removed. A persisted map's page comes from the engine's sorted iterator: a seek and the page,
   * O(log N + page), whatever the size of the map. A memory-only map has no ordered index, so its page costs one
   * pass over the hash index (O(N), no string made for keys outside the page); see `OffHeapMap.range`.
   */
  scan(opts: ScanOptions = {}): ScanPage {
    if (typeof opts !== 'object' || opts === null) throw new HeaplessError('BAD_ARGUMENTS', 'scan(options: object)');
    const { prefix, gte, lt, cursor } = opts;
    const limit = opts.limit ?? DEFAULT_SCAN_LIMIT;
    for (const [name, v] of [
      ['prefix', prefix],
      ['gte', gte],
      ['lt', lt],
      ['cursor', cursor],
    ] as const) {
      if (v !== undefined && typeof v !== 'string')
        throw new HeaplessError('BAD_ARGUMENTS', `scan: ${name} is a string`);
      if (v !== undefined && !v.isWellFormed()) throw illFormed(`scan: ${name}`, v);
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCAN_LIMIT) {
      throw new HeaplessError('BAD_ARGUMENTS', `scan: limit is an integer from 1 to ${MAX_SCAN_LIMIT}`);
    }
    const page = this.#map.range({ prefix, gte, gt: cursor, lt, limit, maxBytes: this.#maxPageBytes });
    const last = page.entries[page.entries.length - 1];
    return { entries: page.entries, cursor: page.more && last !== undefined ? last[0] : undefined };
  }

  size(): number {
    return this.#map.size;
  }

  stats(): KvStats {
    return { ...this.#map.stats(), heapUsedBytes: process.memoryUsage().heapUsed };
  }

  /** Resolves once every write so far is fsynced (at once for a memory-only map). */
  flush(): Promise<void> {
    return detach(this.#map.flush());
  }

  /**
   * Writes a consistent copy of the store, taken while writes go on, to the checkpoint `name` under the configured
   * checkpoint root (see kv-checkpoint.ts); the copy opens elsewhere as the map, from its image. Resolves once the
   * copy is complete. Errors: FORBIDDEN (no checkpoint root), BAD_ARGUMENTS (a name that leaves the root, goes
   * through a symbolic link, or names an existing directory), storage codes (a memory-only store: BAD_ARGUMENTS; a
   * directory inside the store's own; an I/O failure).
   */
  checkpoint(name: string): Promise<KvCheckpoint> {
    const dir = checkpointDirectory(this.#checkpointRoot, name);
    return detach(
      this.#map.checkpoint(dir).then(
        (c: MapCheckpoint) => ({ dir: c.dir, imageSequence: c.imageSequence, ms: c.ms }),
        (err: unknown) => {
          removeCheckpointDirectory(dir);
          throw err;
        },
      ),
    );
  }

  /**
   * Watches the keys starting with `prefix` ('' for all): a stream of `[sequence, key, value | null]` changes in
   * commit order, each pushed once durable (kv-watch.ts), after the reply `{ sequence }` (the store's last sequence
   * now). With `fromSequence`, the changes after it that the store still keeps come first. Over a WebSocket the
   * client gets an async iterator. Errors: BAD_ARGUMENTS (a prefix that is not a well-formed string, a
   * `fromSequence` that is not a non-negative integer, a memory-only store, which has no sequences),
   * KEY_TOO_LARGE (prefix), SEQUENCE_GONE (changes after `fromSequence` no longer kept, or past the last sequence),
   * TOO_MANY_STREAMS (the store has `maxWatches` open).
   */
  watch(prefix: string, opts?: KvWatchOptions): Promise<KvWatch> {
    this.#limits.checkKey(prefix);
    if (opts !== undefined && (typeof opts !== 'object' || opts === null || Array.isArray(opts))) {
      throw new HeaplessError('BAD_ARGUMENTS', 'watch: options is an object');
    }
    const from = opts?.fromSequence ?? undefined;
    if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) {
      throw new HeaplessError('BAD_ARGUMENTS', 'watch: fromSequence is an integer from 0');
    }
    const changes = this.#persistent ? this.#map.changes : undefined;
    if (changes === undefined) throw new HeaplessError('BAD_ARGUMENTS', 'watch needs a persisted store');
    this.#watches ??= new KvWatchHub(
      { changes, durable: () => this.#map.durable() },
      this.#maxWatchBytes,
      this.#watchLingerMs,
      this.#maxWatches,
    );
    return detach(this.#watches.open(Buffer.from(prefix, 'utf8'), from));
  }

  override async onStop(): Promise<void> {
    this.#watches?.close();
    await this.#close();
  }

  /** Whether this write must wait for fsync; throws before anything is written when the map cannot persist. */
  #wantsSync(opts: WriteOptions | undefined): boolean {
    const sync = opts?.sync === true;
    if (sync && !this.#persistent) {
      throw new HeaplessError('BAD_ARGUMENTS', 'sync writes need a persisted map; this one is memory-only');
    }
    return sync;
  }

  /**
   * The reply of a write already applied to the map: detached from the mailbox, so the next message runs while this
   * write waits for the WAL (writes waiting together share one group commit). Undefined for a memory-only map.
   */
  #durable(sync: boolean): Promise<void> | undefined {
    if (!this.#persistent) return undefined;
    return detach(sync ? this.#map.flush() : this.#map.durable());
  }

  /**
   * Writes a filled batch (applied before this returns, so the next call sees it) and answers once it is durable,
   * detached from the mailbox like every write (a storage error rejects with its storage code on the wire).
   */
  #commit(b: MapBatch<string, unknown>, sync: boolean): Promise<KvBatchResult> {
    return detach(b.write({ sync }).then((r) => (r.sequence === undefined ? {} : { sequence: r.sequence })));
  }

  /** Writes checked operations as one atomic batch: to the sink on a following server, else to the map. */
  #commitOps(ops: readonly WriteOp[], sync: boolean): Promise<KvBatchResult> {
    if (this.#sink !== undefined) return detach(this.#toSink(ops));
    return this.#commit(this.#mapBatch(ops), sync);
  }

  /** A batch of the map holding checked operations, in order; not written yet. */
  #mapBatch(ops: readonly WriteOp[]): MapBatch<string, unknown> {
    const b = this.#map.batch();
    for (const op of ops) {
      if (op.type === 'set') b.setBytes(op.key, op.value);
      else b.delete(op.key);
    }
    return b;
  }

  /** Hands `ops` to the sink (the caller detaches the reply); resolves with the log position once applied here. */
  #toSink(ops: readonly WriteOp[]): Promise<KvBatchResult> {
    if (ops.length === 0) return Promise.resolve({});
    return this.#sink!.write(ops);
  }

  /** FORBIDDEN on a following server: its metadata (its stream position above all) is its own. */
  #refuseOnFollower(what: string): void {
    if (this.#sink !== undefined)
      throw new HeaplessError('FORBIDDEN', `${what}: a following server's metadata is written by its follower only`);
  }

  /** Runs a write of the map; its storage errors become the `HeaplessError`s a caller in this process sees too. */
  #write(f: () => void): void {
    try {
      f();
    } catch (e) {
      const code = packageWireCode(e);
      if (code !== undefined) throw new HeaplessError(code, (e as Error).message, { cause: e });
      throw e;
    }
  }
}
