/**
 * `HeaplessLevel`: an abstract-level 3 database over `@heapless/engine`, so that the Level ecosystem (sublevels,
 * encodings, hooks, level-read-stream, many-level...) runs on the engine. abstract-level does the public API
 * (argument checks, encodings through its transcoder, deferred open, sublevels, hooks, events); this class is its
 * private API, one engine call per method, with the engine's bytes handed over in the format asked
 * (`formats.ts`) and the engine's errors in Level's codes (`errors.ts`).
 *
 * Ownership: the database owns one `Engine` from `open()` (explicit, or the one abstract-level starts on the
 * first call) to `close()`, which closes the iterators, chained batches and snapshots still open, then the engine
 * (its files, LOCK and worker threads). It may be opened again after closing.
 */
import { Engine, type EngineOptions, type WriteOperation } from '@heapless/engine';
import { type AbstractDatabaseOptions, AbstractLevel, type AbstractOpenOptions } from 'abstract-level';
import { HeaplessChainedBatch } from './chained-batch.js';
import { HeaplessLevelError, LevelErrorCodes, toLevelError, toLevelWriteError } from './errors.js';
import { type Format, type FormatData, fromEngine, NATIVE_FORMATS } from './formats.js';
import {
  HeaplessIterator,
  HeaplessKeyIterator,
  HeaplessValueIterator,
  openEngineIterator,
  type PrivateIteratorOptions,
  type PrivateRangeOptions,
} from './iterators.js';
import { HeaplessSnapshot } from './snapshot.js';

/**
 * Options of `new HeaplessLevel(location, options)`: abstract-level's (`keyEncoding`, `valueEncoding`,
 * `createIfMissing`, `errorIfExists`, `passive`) and the engine's own (`writeBufferSize`, `blockCacheSize`,
 * `compression`, `sync`, `wal`...), which take effect at each open.
 */
export type HeaplessLevelOptions<K, V> = AbstractDatabaseOptions<K, V> & EngineOptions;

/** Options of `db.open(options)`: abstract-level's, and the engine's, over those given to the constructor. */
export type HeaplessOpenOptions = AbstractOpenOptions & EngineOptions;

/**
 * Every engine option, so that `_open` passes the engine only what it knows (it refuses unknown options, and
 * abstract-level hands over everything the caller gave). Typed as a complete record: an option the engine adds
 * must be listed here before this compiles.
 */
const ENGINE_OPTION_NAMES: Readonly<Record<keyof EngineOptions, true>> = {
  createIfMissing: true,
  errorIfExists: true,
  writeBufferSize: true,
  blockSize: true,
  blockRestartInterval: true,
  bloomBitsPerKey: true,
  targetFileSize: true,
  level0CompactionTrigger: true,
  level0SlowdownTrigger: true,
  level0StopTrigger: true,
  maxBytesForLevelBase: true,
  levelSizeMultiplier: true,
  numLevels: true,
  wal: true,
  sync: true,
  blockCacheSize: true,
  maxOpenFiles: true,
  compression: true,
  zstdLevel: true,
  verifyChecksums: true,
  readOnly: true,
  follower: true,
  periodicCompaction: true,
  retainWalAfter: true,
  walRetentionBytes: true,
  expiryFilter: true,
};

/** Keys deleted per engine batch by `clear()`. */
const CLEAR_BATCH_KEYS = 1024;

/** What abstract-level passes to the private read methods. */
interface PrivateReadOptions {
  keyEncoding: Format;
  valueEncoding: Format;
  snapshot?: HeaplessSnapshot;
}

/** What it passes to the private write methods: `sync` is the one the engine reads (default: its `sync` option). */
interface PrivateWriteOptions {
  sync?: boolean;
}

type PrivateOperation = WriteOperation & { key: FormatData };

/**
 * An abstract-level database stored by `@heapless/engine` in the directory `location`.
 *
 * ```ts
 * const db = new HeaplessLevel<string, { name: string }>('./data', { valueEncoding: 'json' });
 * await db.put('user:1', { name: 'Ada' });
 * ```
 */
export class HeaplessLevel<K = string, V = string> extends AbstractLevel<FormatData, K, V> {
  /** The database directory. */
  readonly location: string;
  /** Set by `_open`, cleared by `_close`: abstract-level calls the other private methods only in between. */
  private engine: Engine | undefined;

  /** Throws TypeError for a `location` that is not a non-empty string. Opens on the first call, or at `open()`. */
  constructor(location: string, options?: HeaplessLevelOptions<K, V>) {
    if (typeof location !== 'string' || location === '') {
      throw new TypeError("The first argument 'location' must be a non-empty string");
    }
    super(
      {
        encodings: NATIVE_FORMATS,
        implicitSnapshots: true,
        explicitSnapshots: true,
        has: true,
        getSync: true,
        seek: true,
        permanence: true,
        createIfMissing: true,
        errorIfExists: true,
        additionalMethods: {},
        signals: { iterators: false },
      } as ConstructorParameters<typeof AbstractLevel>[0],
      options,
    );
    this.location = location;
  }

  /** The open engine. abstract-level guards every call, so this throws only if the engine closed under it. */
  private current(): Engine {
    const engine = this.engine;
    if (engine === undefined) throw new HeaplessLevelError(LevelErrorCodes.DATABASE_NOT_OPEN, 'Database is not open');
    return engine;
  }

  /** @internal Opens the engine with the engine options among `options`; rejects with a Level error. */
  async _open(options: Record<string, unknown>): Promise<void> {
    const engineOptions: Record<string, unknown> = {};
    for (const name of Object.keys(ENGINE_OPTION_NAMES)) {
      if (options[name] !== undefined) engineOptions[name] = options[name];
    }
    try {
      this.engine = await Engine.open(this.location, engineOptions as EngineOptions);
    } catch (err) {
      throw toLevelError(err);
    }
  }

  /** @internal abstract-level has closed every iterator, batch and snapshot first. */
  async _close(): Promise<void> {
    const engine = this.engine;
    this.engine = undefined;
    try {
      await engine?.close();
    } catch (err) {
      throw toLevelError(err);
    }
  }

  private read(key: FormatData, options: PrivateReadOptions): FormatData | undefined {
    let value: Uint8Array | undefined;
    try {
      value = this.current().getSync(key, options.snapshot?.readOptions);
    } catch (err) {
      throw toLevelError(err);
    }
    return value === undefined ? undefined : fromEngine(value, options.valueEncoding);
  }

  /** @internal */
  async _get(key: FormatData, options: PrivateReadOptions): Promise<FormatData | undefined> {
    return this.read(key, options);
  }

  /** @internal */
  _getSync(key: FormatData, options: PrivateReadOptions): FormatData | undefined {
    return this.read(key, options);
  }

  /** @internal All as of one sequence number (the snapshot's, or now). */
  async _getMany(keys: FormatData[], options: PrivateReadOptions): Promise<(FormatData | undefined)[]> {
    let values: (Uint8Array | undefined)[];
    try {
      values = await this.current().getMany(keys, options.snapshot?.readOptions);
    } catch (err) {
      throw toLevelError(err);
    }
    const format = options.valueEncoding;
    const out = values as (FormatData | undefined)[];
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      if (value !== undefined) out[i] = fromEngine(value, format);
    }
    return out;
  }

  /** @internal */
  async _has(key: FormatData, options: PrivateReadOptions): Promise<boolean> {
    return this.read(key, options) !== undefined;
  }

  /** @internal */
  async _hasMany(keys: FormatData[], options: PrivateReadOptions): Promise<boolean[]> {
    return (await this._getMany(keys, options)).map((value) => value !== undefined);
  }

  /** @internal */
  async _put(key: FormatData, value: FormatData, options: PrivateWriteOptions): Promise<void> {
    try {
      await this.current().put(key, value, options);
    } catch (err) {
      throw toLevelWriteError(err, [key]);
    }
  }

  /** @internal */
  async _del(key: FormatData, options: PrivateWriteOptions): Promise<void> {
    try {
      await this.current().delete(key, options);
    } catch (err) {
      throw toLevelWriteError(err, [key]);
    }
  }

  /** @internal Atomic: one engine write (abstract-level's operations have the engine's shape already). */
  async _batch(operations: PrivateOperation[], options: PrivateWriteOptions): Promise<void> {
    try {
      await this.current().write(operations, options);
    } catch (err) {
      throw toLevelWriteError(
        err,
        operations.map((op) => op.key),
      );
    }
  }

  /** @internal */
  _chainedBatch(): HeaplessChainedBatch<this> {
    return new HeaplessChainedBatch(this, this.current().batch());
  }

  /** @internal */
  _iterator(options: PrivateIteratorOptions): HeaplessIterator<this> {
    const it = openEngineIterator(this.current(), options, options.keys !== false, options.values !== false);
    return new HeaplessIterator(this, options, it);
  }

  /** @internal */
  _keys(options: PrivateRangeOptions): HeaplessKeyIterator<this> {
    return new HeaplessKeyIterator(this, options, openEngineIterator(this.current(), options, true, false));
  }

  /** @internal */
  _values(options: PrivateIteratorOptions): HeaplessValueIterator<this> {
    return new HeaplessValueIterator(this, options, openEngineIterator(this.current(), options, false, true));
  }

  /**
   * @internal Deletes the range (with its `limit` and `reverse`) as of the snapshot given, or of the call. The
   * whole range is read and its deletions are applied in one synchronous pass, batches of
   * {@link CLEAR_BATCH_KEYS} keys each: no other call runs in between, so writes made after `clear()` is called
   * are never undone by it. Not atomic across a crash (a crash may leave part of the range deleted). A very large
   * range holds the event loop and the memtables for as long as the pass takes; clear it in pieces.
   */
  async _clear(options: PrivateRangeOptions): Promise<void> {
    const engine = this.current();
    const it = openEngineIterator(engine, { ...options, fillCache: false }, true, false);
    const writes: Promise<void>[] = [];
    try {
      const batch = engine.batch();
      for (;;) {
        const entries = it.nextvSync(CLEAR_BATCH_KEYS);
        if (entries.length === 0) break;
        for (const entry of entries) batch.del(entry[0]);
        // `write` applies the batch to the memtable before it returns, then empties it for the next keys.
        writes.push(batch.write());
      }
    } catch (err) {
      // What was applied stays applied; only the first error is reported.
      for (const write of writes) write.catch(() => {});
      throw toLevelError(err);
    } finally {
      await it.close();
    }
    try {
      await Promise.all(writes);
    } catch (err) {
      throw toLevelError(err);
    }
  }

  /** @internal Taken synchronously: a write made after `db.snapshot()` returns is not in it. */
  _snapshot(options: { owner: object }): HeaplessSnapshot {
    try {
      return new HeaplessSnapshot(options, this.current().snapshot());
    } catch (err) {
      throw toLevelError(err);
    }
  }
}
