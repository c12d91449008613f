/**
 * The engine's figures for operators (RocksDB's `DB::GetProperty` and `DB::Properties`, Pebble's `Metrics`): the
 * derived ones `engine.stats()` adds to its counters (amplifications, hit rates), each table's properties, and the
 * named text properties of `engine.property(name)`.
 *
 * Amplifications follow RocksDB's and Pebble's definitions: write amplification is the bytes flushes and compactions
 * wrote over the bytes the caller wrote; read amplification is the tables a point lookup may have to probe (every
 * level-0 table, one per deeper non-empty level); space amplification is the bytes of every table over those of the
 * deepest non-empty level, which holds (nearly) one version of each key once compaction has caught up.
 */
import type { BackgroundWork } from '../background/background.js';
import type { PeriodicCompaction } from '../background/periodic-compaction.js';
import type { SnapshotList } from '../background/snapshot.js';
import { TRAILER_SIZE } from '../base/internal-key.js';
import type { JobPool } from '../compaction/job-pool.js';
import type { ReadPath } from '../read/read-path.js';
import type { BlockCache } from '../table/block-cache.js';
import type { TableCache } from '../table/table-cache.js';
import type { TableProperties } from '../table/table-properties.js';
import type { Version } from '../version/version.js';
import type { VersionSet } from '../version/version-set.js';
import type { MemtableSet } from '../write/memtables.js';
import type { WriteGate } from '../write/write-gate.js';
import type { WritePath } from '../write/write-path.js';

/** What `engine.stats()` reports. */
export interface EngineStats {
  levels: { files: number; bytes: number }[];
  /** Bytes used by the live memtable and by frozen memtables waiting to be flushed. */
  memtableBytes: number;
  /**
   * WAL records the open checked and has not inserted into the live memtable yet: inserted in the background just
   * after the open, or at once by the first read or write (0 when none).
   */
  pendingWalRecords: number;
  immutableMemtables: number;
  lastSequence: number;
  flushes: number;
  compactions: number;
  trivialMoves: number;
  compactionBytesRead: number;
  compactionBytesWritten: number;
  /** Runs of the `periodicCompaction` schedule that finished. */
  periodicCompactions: number;
  /** Writes whose promise waited for background work (memtables or level 0 piling up). */
  writeStalls: number;
  /** Writes delayed a little because level 0 passed the slowdown trigger. */
  writeSlowdowns: number;
  liveSnapshots: number;
  openIterators: number;
  openTables: number;
  /** Worker threads of the flush and compaction pool (0 until the memtable was a quarter full, and after close). */
  workerThreads: number;
  blockCache: { hits: number; misses: number; blocks: number; usage: number; capacity: number; hitRate: number };
  /** Bytes of level-0 tables written by flushes. */
  flushBytesWritten: number;
  /** Milliseconds of flush and compaction jobs (on the worker threads). */
  flushMillis: number;
  compactionMillis: number;
  /** Milliseconds during which writes were stalled. */
  stallMillis: number;
  /** Bytes the caller wrote (batches of keys and values): the base of write amplification. */
  userBytesWritten: number;
  /** (flush + compaction bytes written) / userBytesWritten. */
  writeAmplification: number;
  /** Tables a point lookup may probe: every level-0 table, one per deeper non-empty level. */
  readAmplification: number;
  /** Bytes of all tables / bytes of the deepest non-empty level. */
  spaceAmplification: number;
  /** Point gets that asked a table's bloom filter, and those it answered "absent" (sparing a block read). */
  bloomFilter: { checked: number; useful: number };
}

/** The engine's parts its stats are read from (engine.ts hands them over whole). */
export interface FigureSources {
  versions: VersionSet;
  memtables: MemtableSet;
  background: BackgroundWork;
  gate: WriteGate;
  snapshots: SnapshotList;
  reads: ReadPath;
  writes: WritePath;
  tableCache: TableCache;
  blockCache: BlockCache;
  jobs: JobPool;
  periodic: PeriodicCompaction;
}

/** What `engine.stats()` reports: the parts' counters and sizes, and the figures derived from them. */
export function engineStats(p: FigureSources): EngineStats {
  const v = p.versions.current;
  const c = p.background.counters;
  const cache = p.blockCache.stats();
  const userBytesWritten = p.writes.bytesWritten;
  return {
    levels: v.files.map((files, level) => ({ files: files.length, bytes: v.levelBytes(level) })),
    memtableBytes: p.memtables.memoryUsage,
    pendingWalRecords: p.memtables.pendingRecords,
    immutableMemtables: p.memtables.frozenCount,
    lastSequence: p.versions.lastSequence,
    ...c,
    writeStalls: p.gate.stalls,
    writeSlowdowns: p.gate.slowdowns,
    liveSnapshots: p.snapshots.size,
    openIterators: p.reads.openIterators,
    openTables: p.tableCache.openCount,
    workerThreads: p.jobs.threads,
    blockCache: { ...cache, hitRate: hitRate(cache.hits, cache.misses) },
    stallMillis: p.gate.stallMillis,
    periodicCompactions: p.periodic.runs,
    userBytesWritten,
    ...amplification(v, userBytesWritten, c.flushBytesWritten + c.compactionBytesWritten),
    bloomFilter: { ...p.tableCache.filterCounters },
  };
}

/** One table of the current version and what its properties block records. */
export interface TableInfo {
  level: number;
  /** File number: the table is `NNNNNN.sst`. */
  number: number;
  /** Bytes of the file. */
  size: number;
  properties: TableProperties;
}

/** The three amplifications (0 when their base is 0: nothing written, or no table). */
export interface Amplification {
  writeAmplification: number;
  readAmplification: number;
  spaceAmplification: number;
}

/** Amplifications of `version`, given the bytes the caller wrote and those flushes and compactions wrote. */
export function amplification(version: Version, userBytes: number, backgroundBytes: number): Amplification {
  let read = version.files[0]!.length;
  let total = 0;
  let deepest = 0;
  for (let level = 0; level < version.files.length; level++) {
    const bytes = version.levelBytes(level);
    total += bytes;
    if (bytes > 0) deepest = bytes;
    if (level > 0 && version.files[level]!.length > 0) read++;
  }
  return {
    writeAmplification: userBytes > 0 ? backgroundBytes / userBytes : 0,
    readAmplification: read,
    spaceAmplification: deepest > 0 ? total / deepest : 0,
  };
}

/** Hits over lookups (0 before the first lookup). */
export function hitRate(hits: number, misses: number): number {
  return hits + misses > 0 ? hits / (hits + misses) : 0;
}

/**
 * The properties of every table of `version`, level by level (level 0 newest first). Opens each table through the
 * table cache (its footer, index and properties block). Throws CorruptionError or EngineError IO from a table.
 */
export function tablesOf(version: Version, tables: TableCache): TableInfo[] {
  const out: TableInfo[] = [];
  version.files.forEach((files, level) => {
    for (const f of files) {
      out.push({ level, number: f.number, size: f.size, properties: tables.get(f.number).properties });
    }
  });
  return out;
}

/** What the named properties are computed from. */
export interface PropertySource {
  version: Version;
  /** `engine.stats()` (a fresh object). */
  stats: () => EngineStats;
  tables: () => TableInfo[];
}

const MIB = 1024 * 1024;

/** Names `engine.property` knows, besides `heapless.num-files-at-level<N>`. */
export const PROPERTY_NAMES = [
  'heapless.stats',
  'heapless.levelstats',
  'heapless.sstables',
  'heapless.table-properties',
  'heapless.approximate-memory-usage',
] as const;

/**
 * The value of property `name` as text (LevelDB's `GetProperty`), or undefined for a name it does not know:
 * - `heapless.num-files-at-level<N>`: the number of tables at level N;
 * - `heapless.levelstats`: a table of files and MiB per level;
 * - `heapless.stats`: every figure of `engine.stats()`, one `name: value` per line;
 * - `heapless.sstables`: the tables per level with their key ranges;
 * - `heapless.table-properties`: each table's properties, one line per table;
 * - `heapless.approximate-memory-usage`: bytes of the memtables and the block cache.
 */
export function propertyValue(name: string, source: PropertySource): string | undefined {
  const m = /^heapless\.num-files-at-level(\d+)$/.exec(name);
  if (m) {
    const level = Number(m[1]);
    return level < source.version.files.length ? String(source.version.files[level]!.length) : undefined;
  }
  switch (name) {
    case 'heapless.levelstats': {
      const lines = ['Level Files Size(MiB)', '--------------------'];
      source.stats().levels.forEach(({ files, bytes }, level) => {
        lines.push(`${String(level).padStart(5)} ${String(files).padStart(5)} ${(bytes / MIB).toFixed(2).padStart(9)}`);
      });
      return `${lines.join('\n')}\n`;
    }
    case 'heapless.stats':
      return `${flatten(source.stats(), '')
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n')}\n`;
    case 'heapless.sstables':
      return `${source.version.dump().join('\n')}\n`;
    case 'heapless.table-properties':
      return source
        .tables()
        .map((t) => `L${t.level} ${t.number}.sst ${t.size} bytes: ${describeProperties(t.properties)}\n`)
        .join('');
    case 'heapless.approximate-memory-usage': {
      const s = source.stats();
      return String(s.memtableBytes + s.blockCache.usage);
    }
    default:
      return undefined;
  }
}

/** `name=value` pairs of a table's properties, keys shown as text where printable, else hex. */
export function describeProperties(p: TableProperties): string {
  return Object.entries(p)
    .map(([k, v]) => `${k}=${v instanceof Uint8Array ? showKey(v) : String(v)}`)
    .join(' ');
}

/** An internal key's user key, as text when it is printable ASCII, else as hex. */
export function showKey(ikey: Uint8Array): string {
  if (ikey.length < TRAILER_SIZE) return '';
  const user = Buffer.from(ikey.buffer, ikey.byteOffset, ikey.length - TRAILER_SIZE);
  return user.every((b) => b >= 0x20 && b < 0x7f) ? `'${user.toString('latin1')}'` : `0x${user.toString('hex')}`;
}

/** Leaf values of a nested stats object as [`a.b`, value] pairs; arrays are indexed (`levels.0.files`). */
function flatten(o: unknown, prefix: string): [string, string][] {
  if (o === null || typeof o !== 'object') return [[prefix, typeof o === 'number' ? round(o) : String(o)]];
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(o)) out.push(...flatten(v, prefix === '' ? k : `${prefix}.${k}`));
  return out;
}

function round(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(3);
}
