/**
 * Engine options, with LevelDB's defaults as the guide, and their validation. `resolveOptions` returns a complete,
 * frozen set so that the rest of the engine never deals with `undefined`.
 */

import { invalidArgument } from './errors.js';
import { checkExpiryFilter, type ExpiryFilter } from './expiry-filter.js';

/**
 * Block compression of the tables the engine writes (each block records its codec, so any table reads with any
 * option): snappy (LevelDB's default), lz4, zstd (RocksDB's choice for cold data; writing it needs Node >= 22.15),
 * deflate (no native code), or none. See table/compression.ts and the README's measurements.
 */
export type Compression = 'none' | 'snappy' | 'lz4' | 'zstd' | 'deflate';

const COMPRESSIONS: readonly Compression[] = ['none', 'snappy', 'lz4', 'zstd', 'deflate'];

/** Bounds of `zstdLevel` (zstd's own: 1 fastest .. 22 smallest) and its default, zstd's and RocksDB's. */
export const ZSTD_MIN_LEVEL = 1;
export const ZSTD_MAX_LEVEL = 22;
export const ZSTD_DEFAULT_LEVEL = 3;

/** When `periodicCompaction` compacts the whole key range: every N seconds, or each day at 'HH:MM' (local time). */
export type PeriodicCompactionSchedule = { everySeconds: number } | { at: string };

export interface EngineOptions {
  /** Create the directory and an empty database when none exists. Default true. */
  createIfMissing?: boolean;
  /** Fail with HEAPLESS_ERR_ENGINE_EXISTS when a database already exists in the directory. Default false. */
  errorIfExists?: boolean;
  /** Bytes a memtable holds before it is frozen and flushed to a level-0 table. Default 4 MiB. */
  writeBufferSize?: number;
  /**
   * Uncompressed size of a table's data block. Default 4096, or {@link ZSTD_BLOCK_SIZE} (16 KiB) when `compression`
   * is 'zstd': zstd describes its entropy coding anew in every block, about 1% of a 4 KiB block, which bigger blocks
   * spread thinner (on seed 002's documents, 83% of the plain bytes at 4 KiB, 81% at 16 KiB, RocksDB's zstd 82%).
   */
  blockSize?: number;
  /** Keys between restart points in a block. Default 16. */
  blockRestartInterval?: number;
  /** Bloom filter bits per key; 0 disables filters. Default 10 (about 1% false positives). */
  bloomBitsPerKey?: number;
  /** A compaction starts a new output table past this size. Default 2 MiB. */
  targetFileSize?: number;
  /** Level 0 is compacted once it holds this many tables. Default 4. */
  level0CompactionTrigger?: number;
  /** Past this many level-0 tables, writes are delayed a little. Default 8. */
  level0SlowdownTrigger?: number;
  /** At this many level-0 tables, write promises wait until compaction catches up. Default 12. */
  level0StopTrigger?: number;
  /** Total bytes level 1 may hold before compaction moves data down. Default 10 MiB. */
  maxBytesForLevelBase?: number;
  /** Each level below 1 may hold this many times the one above. Default 10. */
  levelSizeMultiplier?: number;
  /** Number of levels. Default 7. */
  numLevels?: number;
  /** Write a write-ahead log. False trades durability of the memtable for speed (RocksDB's disableWAL). Default true. */
  wal?: boolean;
  /** The default of each write's `sync`. Default false. */
  sync?: boolean;
  /** Bytes of uncompressed blocks the block cache keeps. Default 32 MiB (RocksDB's default; a miss costs more in JS than in C++). */
  blockCacheSize?: number;
  /** Table readers kept open (each holds one fd). Default 1000. */
  maxOpenFiles?: number;
  /**
   * Block compression of the tables written from now on. Default 'snappy', as LevelDB's and RocksDB's: on seed 000's
   * data and on JSON documents it stores about 37% of the plain bytes at about the read speed of no compression
   * (lz4 reads as fast and stores more; zstd stores least, reads slowest and writes only on Node >= 22.15).
   */
  compression?: Compression;
  /** zstd's level when `compression` is 'zstd': 1 (fastest) to 22 (smallest). Default 3, zstd's and RocksDB's. */
  zstdLevel?: number;
  /** Check block checksums on every read, not only during compaction. Default true. */
  verifyChecksums?: boolean;
  /**
   * Open without a lock, beside a writer that may hold the directory, and never change it: the view is the
   * directory's state as of the open (the WALs replayed into memory only); writes, `flush`, `compactRange` and
   * `checkpoint` reject with HEAPLESS_ERR_ENGINE_READ_ONLY. Needs an existing database. Default false.
   */
  readOnly?: boolean;
  /** Open as a follower (implies `readOnly`): `catchUp()` moves the view to the writer's latest state. See `openFollower`. Default false. */
  follower?: boolean;
  /**
   * Compact the whole key range on a schedule, as `compactRange()` does (seed 004's daily full compaction, RocksDB's
   * periodic compaction); false: never. Default false.
   */
  periodicCompaction?: PeriodicCompactionSchedule | false;
  /**
   * Keep the WALs holding writes after this sequence even once their data is in tables, for a consumer that reads
   * them back with `Engine.updatesSince` (a map image's sequence); moved later by `Engine.retainWalAfter`. Default
   * -1: no pin, a WAL is deleted as soon as its data is in tables. See write/wal-retention.ts.
   */
  retainWalAfter?: number;
  /**
   * Also keep the newest WALs whose data is in tables while their total size stays within this many bytes, whatever
   * the pin (RocksDB's `WAL_size_limit_MB`): a consumer that fell behind and resumes later — a watcher that
   * overflowed — still finds the writes of that many bytes back with `updatesSince`. Checkpoints do not carry these
   * logs, only those the pin keeps. Default 0: none.
   */
  walRetentionBytes?: number;
  /**
   * Where the values carry an expiry (base/expiry-filter.ts): compactions turn an entry whose expiry has passed
   * into a tombstone. The offheap map gives its own (FORMAT.md §13 of @heapless/offheap). Default null: none.
   */
  expiryFilter?: ExpiryFilter | null;
}

export type ResolvedOptions = Readonly<Required<EngineOptions>>;

/** The default `blockSize` of zstd tables (see the option): RocksDB deployments that choose zstd commonly use it. */
export const ZSTD_BLOCK_SIZE = 16 * 1024;

const DEFAULTS: ResolvedOptions = {
  createIfMissing: true,
  errorIfExists: false,
  writeBufferSize: 4 * 1024 * 1024,
  blockSize: 4096,
  blockRestartInterval: 16,
  bloomBitsPerKey: 10,
  targetFileSize: 2 * 1024 * 1024,
  level0CompactionTrigger: 4,
  level0SlowdownTrigger: 8,
  level0StopTrigger: 12,
  maxBytesForLevelBase: 10 * 1024 * 1024,
  levelSizeMultiplier: 10,
  numLevels: 7,
  wal: true,
  sync: false,
  blockCacheSize: 32 * 1024 * 1024,
  maxOpenFiles: 1000,
  compression: 'snappy',
  zstdLevel: ZSTD_DEFAULT_LEVEL,
  verifyChecksums: true,
  readOnly: false,
  follower: false,
  periodicCompaction: false,
  retainWalAfter: -1,
  walRetentionBytes: 0,
  expiryFilter: null,
};

function int(name: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw invalidArgument(`option ${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v;
}

/**
 * Fills in defaults and checks ranges. Throws EngineError HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT naming the bad option.
 */
export function resolveOptions(options: EngineOptions = {}): ResolvedOptions {
  const o: Required<EngineOptions> = { ...DEFAULTS };
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    if (!(k in DEFAULTS)) throw invalidArgument(`unknown option ${k}`);
    (o as Record<string, unknown>)[k] = v;
  }
  if (options.blockSize === undefined && o.compression === 'zstd') o.blockSize = ZSTD_BLOCK_SIZE;
  for (const k of [
    'createIfMissing',
    'errorIfExists',
    'wal',
    'sync',
    'verifyChecksums',
    'readOnly',
    'follower',
  ] as const) {
    if (typeof o[k] !== 'boolean') throw invalidArgument(`option ${k} must be a boolean`);
  }
  int('writeBufferSize', o.writeBufferSize, 4096, 1024 * 1024 * 1024);
  int('blockSize', o.blockSize, 256, 4 * 1024 * 1024);
  int('blockRestartInterval', o.blockRestartInterval, 1, 1024);
  int('bloomBitsPerKey', o.bloomBitsPerKey, 0, 64);
  int('targetFileSize', o.targetFileSize, 1024, 1024 * 1024 * 1024);
  int('level0CompactionTrigger', o.level0CompactionTrigger, 1, 1000);
  int('level0SlowdownTrigger', o.level0SlowdownTrigger, o.level0CompactionTrigger, 1000);
  int('level0StopTrigger', o.level0StopTrigger, o.level0SlowdownTrigger, 1000);
  int('maxBytesForLevelBase', o.maxBytesForLevelBase, 1024, 2 ** 50);
  int('levelSizeMultiplier', o.levelSizeMultiplier, 2, 1000);
  int('numLevels', o.numLevels, 2, 20);
  int('blockCacheSize', o.blockCacheSize, 0, 2 ** 50);
  int('maxOpenFiles', o.maxOpenFiles, 16, 1_000_000);
  if (!COMPRESSIONS.includes(o.compression)) {
    throw invalidArgument(`option compression must be one of ${COMPRESSIONS.join(', ')}, got ${String(o.compression)}`);
  }
  int('zstdLevel', o.zstdLevel, ZSTD_MIN_LEVEL, ZSTD_MAX_LEVEL);
  checkSchedule(o.periodicCompaction);
  int('retainWalAfter', o.retainWalAfter, -1, Number.MAX_SAFE_INTEGER);
  int('walRetentionBytes', o.walRetentionBytes, 0, Number.MAX_SAFE_INTEGER);
  checkExpiryFilter(o.expiryFilter);
  return Object.freeze(o);
}

const MAX_PERIOD_SECONDS = 366 * 24 * 3600;

function checkSchedule(s: unknown): void {
  if (s === false) return;
  const keys = s !== null && typeof s === 'object' ? Object.keys(s) : [];
  const every = (s as { everySeconds?: unknown } | null)?.everySeconds;
  const at = (s as { at?: unknown } | null)?.at;
  const ok =
    keys.length === 1 &&
    ((typeof every === 'number' && every >= 0.001 && every <= MAX_PERIOD_SECONDS) ||
      (typeof at === 'string' && /^([01]\d|2[0-3]):[0-5]\d$/.test(at)));
  if (!ok) {
    throw invalidArgument(
      `option periodicCompaction must be false, { everySeconds: N } (0.001..${MAX_PERIOD_SECONDS}) or { at: 'HH:MM' }, got ${JSON.stringify(s)}`,
    );
  }
}
