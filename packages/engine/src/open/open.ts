/**
 * Opening a database directory (Pebble's open.go): options, the directory, the LOCK, the manifest, the check of the
 * manifest against the files present, and the replay of the WALs it still needs. What comes out is the state the
 * engine is assembled from (engine.ts); nothing runs in the background yet.
 *
 * Nothing on disk changes before the manifest's state has been checked against the directory
 * (`VersionSet.verifyFiles`); if the open then fails, the files it wrote (tables of replayed writes, a new WAL) are
 * removed again, and the LOCK and READERS it made, so a failed open leaves the directory as it found it. Obsolete files are not deleted here: the
 * engine does that once it runs, when a manifest that no longer needs them is durable.
 *
 * After a clean close (the manifest read to its end; with a WAL, exactly one log left, ending with a whole record,
 * its records fitting one memtable; without a WAL, no log) there is nothing to record, so open writes and syncs
 * nothing: the manifest is appended to as it is, the replayed memtable becomes the live one and its WAL the live
 * WAL, new writes following the old ones. That holds because the manifest's log number is that WAL's number, so the
 * next recovery replays it. Otherwise the replayed writes go to level-0 tables and one fresh manifest records them
 * together with a new WAL.
 *
 * In that clean case the log's records are checked (checksums, sequences) at open but not yet inserted into the
 * memtable: they are `pending` (memtables.ts), inserted at the engine's first use of its memtables or in the
 * background soon after the open, whichever comes first. A fresh process inserts into a skiplist at a few µs per
 * write in code V8 has not optimised yet; an open after a crash that left thousands of writes in the WAL, followed by
 * reads that never reach the engine (a map loaded from its image), does not wait for that.
 */
import { existsSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { builderOptions } from '../background/background.js';
import { READERS_FILE, ReaderRegistry } from '../background/reader-pins.js';
import { EngineError, ErrorCodes, invalidArgument, ioError } from '../base/errors.js';
import { FileType, type ListedFile, LOCK_FILE, logFileName, parseListing, tableFileName } from '../base/filenames.js';
import { type EngineOptions, type ResolvedOptions, resolveOptions } from '../base/options.js';
import { flushMemtable } from '../compaction/compaction-job.js';
import { Memtable } from '../memtable/memtable.js';
import { RecordReader } from '../record/record-reader.js';
import { RecordWriter } from '../record/record-writer.js';
import { blockCompressor } from '../table/compression.js';
import { VersionEdit } from '../version/version-edit.js';
import { VersionSet } from '../version/version-set.js';
import { insertInto, type PendingRecord } from '../write/memtables.js';
import type { UpdateBatch } from '../write/updates-since.js';
import { type BatchHandler, batchCount, batchSequence, replayBatch } from '../write/write-batch.js';
import { LockFile } from './lock-file.js';
import type { OpenedDatabase } from './opened-database.js';
import { openReadOnly } from './read-only.js';

/**
 * Opens `dir` (see the top of the file). Throws EngineError LOCKED, NOT_FOUND, EXISTS, INVALID_ARGUMENT or IO, or
 * CorruptionError; a failed open releases what it took and leaves every file in `dir` as it was.
 */
export function openDatabase(dir: string, options?: EngineOptions): OpenedDatabase {
  const opts = resolveOptions(options);
  if (typeof dir !== 'string' || dir.length === 0) throw invalidArgument('dir must be a non-empty string');
  // It writes no table: whatever codec the option names is never used.
  if (opts.readOnly || opts.follower) return openReadOnly(dir, opts);
  // A codec that cannot be used here (zstd before Node 22.15, a binding that does not load) fails the open, not the
  // first flush in a worker.
  blockCompressor(opts.compression, opts.zstdLevel);
  let exists = VersionSet.exists(dir);
  if (!exists && opts.createIfMissing) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw ioError('creating', dir, err);
    }
    // Made meanwhile by another opener, which the lock below then refuses or follows.
    exists = VersionSet.exists(dir);
  }
  if (!exists && !opts.createIfMissing) {
    throw new EngineError(ErrorCodes.NOT_FOUND, `${dir} does not exist: no database there (createIfMissing is false)`);
  }
  if (exists && opts.errorIfExists) {
    throw new EngineError(ErrorCodes.EXISTS, `a database already exists in ${dir} (errorIfExists is true)`);
  }
  // A failed open leaves the directory as it found it: the LOCK and READERS it made go again (see below).
  const made = [join(dir, LOCK_FILE), join(dir, READERS_FILE)].filter((path) => !existsSync(path));
  const lock = LockFile.acquire(dir);
  const versions = new VersionSet(dir, opts.numLevels);
  let readers: ReaderRegistry | undefined;
  try {
    readers = ReaderRegistry.open(dir);
    if (exists) versions.recover();
    let listing: ListedFile[];
    try {
      listing = parseListing(readdirSync(dir));
    } catch (err) {
      throw ioError('listing', dir, err);
    }
    versions.verifyFiles(listing);
    const created: string[] = [];
    try {
      const recovered: UpdateBatch[] = [];
      const { mem, pending, log, logNumber } = replayAndRecord(dir, opts, versions, listing, created, recovered);
      return { dir, options: opts, lock, readers, versions, mem, pending, log, logNumber, listing, recovered };
    } catch (err) {
      for (const path of created) {
        try {
          unlinkSync(path);
        } catch {
          // Never written.
        }
      }
      throw err;
    }
  } catch (err) {
    readers?.close();
    versions.close();
    // Removed while the lock is held, so no opener can take it between. What remains: an opener that opened the old
    // LOCK before the unlink and locks it after the release holds a file no longer in the directory, beside one that
    // makes a new LOCK; both then meet whatever made this open fail (it is not a database, or a damaged one).
    for (const path of made) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone, or not removable: an empty file that no open reads as data.
      }
    }
    lock.release();
    throw err;
  }
}

/** A batch handler that inserts nothing: replayBatch then only checks the entries fill their record. */
const CHECK_ONLY: BatchHandler = { put: () => {}, del: () => {} };

/**
 * Recovery's writing part: replays the logs the manifest still needs, then either keeps the manifest and the last
 * log as they are (a clean close) or writes the replayed writes to level-0 tables and records them and a new WAL in
 * a fresh manifest. Every file it creates is listed in `created` before it is written; the batches holding writes
 * after the `retainWalAfter` pin are added to `recovered`.
 */
function replayAndRecord(
  dir: string,
  options: ResolvedOptions,
  versions: VersionSet,
  listing: readonly ListedFile[],
  created: string[],
  recovered: UpdateBatch[],
): { mem: Memtable; pending: PendingRecord[]; log: RecordWriter | undefined; logNumber: number } {
  const pin = options.retainWalAfter;
  const logs: number[] = [];
  for (const f of listing) {
    versions.markFileNumberUsed(f.number);
    if (f.type === FileType.Log && f.number >= versions.logNumber) logs.push(f.number);
  }
  logs.sort((a, b) => a - b);
  const edit = new VersionEdit();
  const builder = builderOptions(options);
  // Room for nothing: sized at the first record, so an open with nothing to replay allocates no arenas. As the live
  // memtable, the first write finds it full and rotates to a full-size one: an engine that is only read never
  // allocates the ~10 MiB of arenas.
  let mem = new Memtable(0);
  let maxSequence = versions.lastSequence;
  /** Bytes of the last log, when it ends with a whole record; -1 after a torn tail. */
  let logEnd = 0;
  const flushRecovered = () => {
    if (mem.count === 0) return;
    const number = versions.newFileNumber();
    created.push(tableFileName(dir, number));
    const result = flushMemtable({ kind: 'flush', dir, number, memtable: mem.share(), builder });
    for (const o of result.outputs) edit.addFile(0, o);
  };
  const handler = insertInto(() => mem);
  const cursor = new Int32Array(1);
  // Every record first: checksums, sequences and counts, cheap over logs read whole.
  const records: PendingRecord[] = [];
  let bytes = 0;
  let entries = 0;
  for (const n of logs) {
    const path = logFileName(dir, n);
    const reader = new RecordReader(path);
    for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
      const count = batchCount(rec);
      const seq = batchSequence(rec);
      // A record is its own bytes (a view of the log read whole, or a copy of a record split across blocks).
      records.push({ rep: rec, path, offset: reader.recordOffset });
      bytes += rec.length;
      entries += count;
      if (pin >= 0 && seq + count - 1 > pin) recovered.push({ sequence: seq, count, rep: rec });
      if (count > 0 && seq + count - 1 > maxSequence) maxSequence = seq + count - 1;
    }
    logEnd = reader.validLength === reader.fileSize ? reader.fileSize : -1;
  }
  versions.lastSequence = maxSequence;
  const wal = options.wal;
  // With a WAL, the manifest's log number must name the live WAL (`verifyFiles` relies on it): a database last
  // written without one (no log left) records its new WAL. Without a WAL, a replayed log must be retired by a
  // manifest: nothing else would ever stop it being replayed.
  // A single log ending with a whole record may stay the live WAL, its writes the live memtable's.
  const reusable = logEnd >= 0 && logs.length === (wal ? 1 : 0);
  if (records.length > 0) mem = new Memtable(options.writeBufferSize);
  // Room for the records at their largest (every node of the highest level): insert them later (see the top).
  const pending = reusable && mem.hasRoomFor(bytes, entries);
  const insert = () => {
    // As many memtables as they fill (a record larger than one in a memtable of its own), all but the last to tables.
    for (const { rep, path, offset } of records) {
      const count = batchCount(rep);
      if (!mem.hasRoomFor(rep.length, count)) {
        flushRecovered();
        mem = new Memtable(Math.max(options.writeBufferSize, Memtable.capacityForBatch(rep.length, count)));
      }
      replayBatch(rep, rep.length, batchSequence(rep), handler, cursor, path, offset);
    }
  };
  if (pending) {
    // Their entries are walked now (no insert), so that a malformed batch behind a good checksum fails the open.
    for (const { rep, path, offset } of records)
      replayBatch(rep, rep.length, batchSequence(rep), CHECK_ONLY, cursor, path, offset);
  } else insert();
  if (reusable && edit.newFiles.length === 0 && versions.reuseManifest()) {
    const last = logs[0];
    if (last === undefined) return { mem: new Memtable(0), pending: [], log: undefined, logNumber: 0 };
    const log = new RecordWriter(logFileName(dir, last), undefined, logEnd);
    return { mem, pending: pending ? records : [], log, logNumber: last };
  }
  if (pending) insert(); // the manifest could not be reused: into tables after all
  flushRecovered();
  let log: RecordWriter | undefined;
  let logNumber = 0;
  if (wal) {
    logNumber = versions.newFileNumber();
    const path = logFileName(dir, logNumber);
    created.push(path);
    log = new RecordWriter(path);
  }
  try {
    // The new log number (without a WAL: the next file number) retires every log replayed here.
    edit.logNumber = wal ? logNumber : versions.nextFileNumber;
    // One new manifest records the recovered tables and the new log number together (tables are already synced).
    versions.applyUnlogged(edit);
    versions.writeNewManifest();
  } catch (err) {
    log?.close();
    throw err;
  }
  return { mem: new Memtable(0), pending: [], log, logNumber };
}
