/**
 * `repairDatabase(dir)`: rebuilds the manifest from the files present, after the MANIFEST or CURRENT was lost or
 * damaged (LevelDB's repairer, db/repair.cc). Under the directory's lock:
 *
 * 1. each WAL is replayed into a memtable and written to new level-0 tables, as far as its records hold (a log damaged
 *    in the middle gives back the records before the damage); the log then moves to `lost/`;
 * 2. each table is read through, entry by entry (every data block's checksum is checked on the way), for its key
 *    range, entry count and largest sequence number; a table that does not read through moves to `lost/`;
 * 3. when no two tables that share keys also share sequence numbers (a database of level-0 flushes, say), the
 *    tables are renumbered in order of their largest sequence number, so that level 0's newest-first order (by
 *    file number) is also the order of their writes, and all go to level 0, where tables may overlap; the engine's
 *    compactions sort them into levels again. Otherwise (tables from compactions: a rewritten deeper table can hold
 *    an old version of a key beside writes newer than a level-0 table that holds its new version) no order of level
 *    0 is right for every key, and the tables are merged, as a full compaction does, into one sorted run at the last
 *    level: the newest version of every key, the hidden older ones dropped; the merged tables are deleted once the
 *    new manifest is durable, their data being in the new ones;
 * 4. a new manifest records them, with the last sequence the tables hold and a log number that retires every log;
 *    CURRENT is pointed at it (a copy of the CURRENT it replaces is kept in `lost/` first), and the old manifests
 *    move to `lost/`.
 *
 * Nothing is deleted: a file repair cannot use is moved into `lost/` (as LevelDB does), for the user to inspect, and
 * what it replaces is kept there too. An interrupted repair leaves every record in some file of the directory;
 * running repair again completes it.
 *
 * Repair fixes a damaged database, so it must not take an arbitrary directory for one and fill it with a manifest:
 * it works on a directory that holds at least one of the engine's own files (CURRENT, a MANIFEST-*, a numbered .log
 * or .sst), which is what is left of a database whatever was damaged. An empty directory, a missing one, or one
 * holding none of those files is refused with NOT_FOUND, unless `createIfMissing` asks for a new, empty database.
 */
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  unlinkSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { builderOptions } from '../background/background.js';
import { CorruptionError, EngineError, ErrorCodes, ioError } from '../base/errors.js';
import {
  CURRENT_FILE,
  FileType,
  logFileName,
  manifestFileName,
  parseFileName,
  tableFileName,
} from '../base/filenames.js';
import { compareBytes, sequenceOf, userKeyOf, ValueKind } from '../base/internal-key.js';
import { type EngineOptions, resolveOptions } from '../base/options.js';
import { compactTables, flushMemtable } from '../compaction/compaction-job.js';
import { Memtable } from '../memtable/memtable.js';
import { LockFile } from '../open/lock-file.js';
import { RecordReader } from '../record/record-reader.js';
import { RecordWriter } from '../record/record-writer.js';
import { TableReader } from '../table/table-reader.js';
import type { FileMetaData } from '../version/version-edit.js';
import { VersionEdit } from '../version/version-edit.js';
import { setCurrentFile, syncDirectory } from '../version/version-set.js';
import { type BatchHandler, batchCount, batchSequence, replayBatch } from '../write/write-batch.js';

/** The folder of a database directory where repair moves what it cannot use. */
export const LOST_FOLDER = 'lost';

/** What `repairDatabase` did. */
export interface RepairReport {
  /** Tables the new manifest lists (at level 0, or at the last level when they were merged). */
  tables: number;
  /** Entries in them (every version of every key, tombstones included; after a merge, only the newest). */
  entries: number;
  /** True when the tables found were merged into one sorted run (see step 3 above). */
  merged: boolean;
  /** Logs replayed into new tables, and the records they gave back. */
  logs: number;
  logRecords: number;
  /** The last sequence number recorded. */
  lastSequence: number;
  /** Files moved into `lost/`, by name, with why. */
  lost: { file: string; reason: string }[];
}

/**
 * Options of `repairDatabase`: the engine options the new tables are written with (compression, bloom filter...),
 * `onProgress`, called before each log is replayed and each table read through (`done` of `total` files so far), and
 * `createIfMissing` (default false): make an empty database of a directory that holds none of the engine's files.
 */
export type RepairOptions = {
  onProgress?: (done: number, total: number, file: string) => void;
  createIfMissing?: boolean;
} & Pick<
  EngineOptions,
  | 'blockSize'
  | 'blockRestartInterval'
  | 'bloomBitsPerKey'
  | 'compression'
  | 'zstdLevel'
  | 'writeBufferSize'
  | 'targetFileSize'
  | 'numLevels'
>;

/**
 * Repairs the database in `dir` (see the top of the file). Rejects with EngineError NOT_FOUND when `dir` holds none
 * of the engine's files (and `createIfMissing` is not set), LOCKED when an open engine holds it, INVALID_ARGUMENT
 * for bad options, or IO; damaged files are reported in the result, not thrown.
 */
export async function repairDatabase(dir: string, options: RepairOptions = {}): Promise<RepairReport> {
  const { onProgress, createIfMissing = false, ...engineOptions } = options;
  const opts = resolveOptions(engineOptions);
  if (!createIfMissing && !holdsEngineFiles(dir)) {
    throw new EngineError(
      ErrorCodes.NOT_FOUND,
      `${dir} holds no database files (CURRENT, MANIFEST-*, *.log, *.sst): nothing to repair (createIfMissing is false)`,
    );
  }
  if (createIfMissing) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw ioError('creating', dir, err);
    }
  }
  const lock = LockFile.acquire(dir);
  try {
    return new Repairer(dir, builderOptions(opts), opts, onProgress).run();
  } finally {
    lock.release();
  }
}

/** Takes a batch's entries and does nothing: replaying into it checks the batch's framing. */
const IGNORE: BatchHandler = { put: () => {}, del: () => {} };

class Repairer {
  private nextNumber = 1;
  private readonly report: RepairReport = {
    tables: 0,
    entries: 0,
    merged: false,
    logs: 0,
    logRecords: 0,
    lastSequence: 0,
    lost: [],
  };
  private readonly writeBufferSize: number;

  constructor(
    private readonly dir: string,
    private readonly builder: ReturnType<typeof builderOptions>,
    private readonly opts: { writeBufferSize: number; targetFileSize: number; numLevels: number },
    private readonly onProgress?: (done: number, total: number, file: string) => void,
  ) {
    this.writeBufferSize = opts.writeBufferSize;
  }

  run(): RepairReport {
    const names = readdirSync(this.dir);
    const tables: number[] = [];
    const logs: number[] = [];
    const manifests: number[] = [];
    for (const name of names) {
      const f = parseFileName(name);
      if (f === undefined) continue;
      if (f.number >= this.nextNumber) this.nextNumber = f.number + 1;
      if (f.type === FileType.Table) tables.push(f.number);
      else if (f.type === FileType.Log) logs.push(f.number);
      else if (f.type === FileType.Manifest) manifests.push(f.number);
    }
    logs.sort((a, b) => a - b);
    const total = logs.length + tables.length;
    let done = 0;
    const step = (path: string) => this.onProgress?.(done++, total, basename(path));
    const found = tables.length;
    for (const n of logs) {
      step(logFileName(this.dir, n));
      tables.push(...this.convertLog(n));
    }
    const scanned: ScannedTable[] = [];
    for (const [i, n] of tables.entries()) {
      // Tables made from the logs were counted with their log.
      if (i < found) step(tableFileName(this.dir, n));
      const s = this.scanTable(n);
      if (s !== undefined) scanned.push(s);
    }
    for (const s of scanned) if (s.maxSequence > this.report.lastSequence) this.report.lastSequence = s.maxSequence;
    const edit = new VersionEdit();
    const merged = sequencesInterleave(scanned) ? this.merge(scanned) : undefined;
    if (merged === undefined) {
      // Renumbered by largest sequence, oldest writes first: level 0 is read newest (highest number) first.
      scanned.sort((a, b) => a.maxSequence - b.maxSequence || a.meta.number - b.meta.number);
      for (const s of scanned) {
        const number = this.nextNumber++;
        this.rename(tableFileName(this.dir, s.meta.number), tableFileName(this.dir, number));
        edit.addFile(0, { ...s.meta, number });
        this.report.entries += s.meta.entries;
      }
      this.report.tables = scanned.length;
    } else {
      for (const meta of merged) {
        edit.addFile(this.opts.numLevels - 1, meta);
        this.report.entries += meta.entries;
      }
      this.report.tables = merged.length;
      this.report.merged = true;
    }
    this.writeManifest(edit);
    // The merged tables' data is in the new ones, which the durable manifest lists: they are obsolete, as a
    // compaction's inputs are.
    if (merged !== undefined) for (const s of scanned) this.remove(tableFileName(this.dir, s.meta.number));
    for (const n of manifests) this.moveToLost(manifestFileName(this.dir, n), 'replaced by the repaired manifest');
    return this.report;
  }

  /**
   * Merges every table into new ones (one sorted run, the newest version of each key) and returns their metadata.
   * The inputs are left in place.
   */
  private merge(scanned: readonly ScannedTable[]): FileMetaData[] {
    let bytes = 0;
    for (const s of scanned) bytes += s.meta.size;
    // Numbers for the outputs, more than enough: past them, the last output would only grow beyond its target.
    const outputs = Math.ceil(bytes / this.opts.targetFileSize) * 2 + 8;
    const outputNumbers = Array.from({ length: outputs }, () => this.nextNumber++);
    const result = compactTables({
      kind: 'compact',
      dir: this.dir,
      // Newest first, as a compaction orders its inputs; ties of one internal key (a log replayed into a table
      // that was also flushed) keep one copy.
      inputs: [...scanned].sort((a, b) => b.maxSequence - a.maxSequence).map((s) => s.meta.number),
      outputNumbers,
      deeper: [],
      smallestSnapshot: this.report.lastSequence,
      // A repair keeps every entry it can read, expired or not.
      expiryFilter: null,
      now: Date.now(),
      targetFileSize: this.opts.targetFileSize,
      builder: this.builder,
    });
    syncDirectory(this.dir);
    return result.outputs;
  }

  /** Replays log `n` into new tables (their numbers returned), then moves it to lost/. */
  private convertLog(n: number): number[] {
    const path = logFileName(this.dir, n);
    const out: number[] = [];
    let mem = new Memtable(0);
    const flush = () => {
      if (mem.count === 0) return;
      const number = this.nextNumber++;
      const result = flushMemtable({
        kind: 'flush',
        dir: this.dir,
        number,
        memtable: mem.share(),
        builder: this.builder,
      });
      if (result.outputs.length > 0) out.push(number);
    };
    const handler: BatchHandler = {
      put: (buf, ks, kl, vs, vl, seq) => mem.add(seq, ValueKind.Value, buf, ks, kl, buf, vs, vl),
      del: (buf, ks, kl, seq) => mem.add(seq, ValueKind.Deletion, buf, ks, kl, buf, 0, 0),
    };
    const cursor = new Int32Array(1);
    let reason = 'replayed into tables';
    try {
      const reader = new RecordReader(path, 'damaged');
      for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
        const count = batchCount(rec);
        if (!mem.hasRoomFor(rec.length, count)) {
          flush();
          mem = new Memtable(Math.max(this.writeBufferSize, Memtable.capacityForBatch(rec.length, count)));
        }
        const seq = batchSequence(rec);
        // Checked whole before any of it is applied: a batch comes back entirely or not at all.
        replayBatch(rec, rec.length, seq, IGNORE, cursor, path, reader.recordOffset);
        replayBatch(rec, rec.length, seq, handler, cursor, path, reader.recordOffset);
        this.report.logRecords++;
      }
    } catch (err) {
      if (!(err instanceof CorruptionError)) throw err;
      // The records before the damage are in `mem`.
      reason = `replayed up to the damage: ${err.message}`;
    }
    flush();
    this.report.logs++;
    this.moveToLost(path, reason);
    return out;
  }

  /** Reads table `n` through for its metadata; a table that does not read moves to lost/. */
  private scanTable(n: number): ScannedTable | undefined {
    const path = tableFileName(this.dir, n);
    let reader: TableReader;
    try {
      reader = TableReader.open(path, { fileNumber: n, verifyChecksums: true });
    } catch (err) {
      if (!(err instanceof CorruptionError)) throw err;
      this.moveToLost(path, err.message);
      return undefined;
    }
    let smallest: Uint8Array | undefined;
    let largest: Uint8Array | undefined;
    let entries = 0;
    let maxSequence = 0;
    let minSequence = Number.POSITIVE_INFINITY;
    const it = reader.iterator({ fillCache: false });
    try {
      for (it.seekToFirst(); it.valid(); it.next()) {
        const k = it.key();
        if (smallest === undefined) smallest = k.slice();
        largest = k;
        entries++;
        const seq = sequenceOf(k);
        if (seq > maxSequence) maxSequence = seq;
        if (seq < minSequence) minSequence = seq;
      }
      largest = largest?.slice();
    } catch (err) {
      if (!(err instanceof CorruptionError)) throw err;
      it.close();
      reader.close();
      this.moveToLost(path, err.message);
      return undefined;
    }
    it.close();
    const size = reader.fileSize;
    reader.close();
    if (smallest === undefined || largest === undefined) {
      this.moveToLost(path, 'the table holds no entry');
      return undefined;
    }
    return { meta: { number: n, size, entries, smallest, largest }, minSequence, maxSequence };
  }

  /**
   * Writes the new manifest with `edit`'s tables and points CURRENT at it, durably; a copy of the CURRENT it
   * replaces goes to lost/ first (the rename over it keeps CURRENT whole at every moment).
   */
  private writeManifest(edit: VersionEdit): void {
    const current = join(this.dir, CURRENT_FILE);
    if (existsSync(current)) this.keepInLost(current, 'replaced by one naming the repaired manifest (a copy)');
    const manifestNumber = this.nextNumber++;
    const tempNumber = this.nextNumber++;
    // Every log was replayed (and moved): the log number retires them all; the next open starts a new one.
    edit.logNumber = this.nextNumber;
    edit.nextFileNumber = this.nextNumber;
    edit.lastSequence = this.report.lastSequence;
    const writer = new RecordWriter(manifestFileName(this.dir, manifestNumber));
    try {
      const bytes = edit.encode();
      writer.addRecord(bytes, 0, bytes.length);
      writer.writePending();
      writer.syncNow();
    } finally {
      writer.close();
    }
    setCurrentFile(this.dir, manifestNumber, tempNumber);
  }

  private remove(path: string): void {
    try {
      unlinkSync(path);
    } catch (err) {
      throw ioError('deleting', path, err);
    }
  }

  private rename(from: string, to: string): void {
    if (from === to) return;
    try {
      renameSync(from, to);
    } catch (err) {
      throw ioError('renaming', `${from} to ${to}`, err);
    }
  }

  /** Moves `path` into lost/ (never over a file already there), and records why. */
  private moveToLost(path: string, reason: string): void {
    this.rename(path, this.lostName(path));
    syncDirectory(this.dir);
    this.report.lost.push({ file: basename(path), reason });
  }

  /** Copies `path` into lost/ (never over a file already there), durably, and records why. */
  private keepInLost(path: string, reason: string): void {
    const target = this.lostName(path);
    try {
      copyFileSync(path, target, constants.COPYFILE_EXCL);
      const fd = openSync(target, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      throw ioError('copying', `${path} to ${target}`, err);
    }
    syncDirectory(join(this.dir, LOST_FOLDER));
    this.report.lost.push({ file: basename(path), reason });
  }

  /** A name in lost/ for `path` that no file has yet, lost/ made if missing. */
  private lostName(path: string): string {
    const lost = join(this.dir, LOST_FOLDER);
    try {
      mkdirSync(lost, { recursive: true });
    } catch (err) {
      throw ioError('creating', lost, err);
    }
    let target = join(lost, basename(path));
    for (let i = 1; existsSync(target); i++) target = join(lost, `${basename(path)}.${i}`);
    return target;
  }
}

/** A table read through by the repair: its metadata and the range of sequence numbers it holds. */
interface ScannedTable {
  readonly meta: FileMetaData;
  readonly minSequence: number;
  readonly maxSequence: number;
}

/**
 * True when two tables whose user-key ranges meet also hold sequence ranges that meet: then no order of the tables
 * is newest-first for every key they share, and level 0 (read table by table, the first that holds a key wins)
 * could answer with an older version.
 */
function sequencesInterleave(tables: readonly ScannedTable[]): boolean {
  const byStart = tables
    .map((t) => ({ t, smallest: userKeyOf(t.meta.smallest), largest: userKeyOf(t.meta.largest) }))
    .sort((a, b) => compareBytes(a.smallest, b.smallest));
  const open: typeof byStart = [];
  for (const cur of byStart) {
    // A table that ends before this one starts meets none of the rest either (they start no earlier).
    for (let i = open.length - 1; i >= 0; i--) if (compareBytes(open[i]!.largest, cur.smallest) < 0) open.splice(i, 1);
    for (const o of open) if (o.t.minSequence <= cur.t.maxSequence && cur.t.minSequence <= o.t.maxSequence) return true;
    open.push(cur);
  }
  return false;
}

/** Whether `dir` holds any of the engine's own files: CURRENT, a manifest, a numbered log or table. */
function holdsEngineFiles(dir: string): boolean {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') {
      return false;
    }
    throw ioError('listing', dir, err);
  }
  return names.some((name) => {
    const type = parseFileName(name)?.type;
    return type === FileType.Current || type === FileType.Manifest || type === FileType.Log || type === FileType.Table;
  });
}
