/**
 * Checkpoints: a consistent, openable copy of a database taken while it runs. Tables are immutable, so they are
 * hard-linked (copied when the target is on another file system); the WALs still needed are copied as they are
 * (a copy that ends in a torn record is fine: recovery drops a torn tail); a fresh manifest describing exactly the
 * linked tables is written, then CURRENT. All synchronous, between two turns of the engine's event loop, so no flush
 * or compaction can change the set of files meanwhile.
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync } from 'node:fs';
import { EngineError, invalidArgument, ioError } from '../base/errors.js';
import { logFileName, manifestFileName, tableFileName } from '../base/filenames.js';
import { RecordWriter } from '../record/record-writer.js';
import type { VersionEdit } from '../version/version-edit.js';
import { setCurrentFile, syncDirectory } from '../version/version-set.js';

/**
 * Copies the database in `from` into `to` as described by `edit` (a snapshot edit of the current version, whose
 * `logNumber` is the oldest WAL listed in `logs`). `retained`: older logs a retention pin keeps, linked like tables
 * (nothing appends to them; the copy's recovery does not replay them, `updatesSince` reads them). Throws EngineError
 * INVALID_ARGUMENT if `to` exists and is not empty, IO on failure.
 */
export function createCheckpoint(
  from: string,
  to: string,
  edit: VersionEdit,
  logs: readonly number[],
  retained: readonly number[] = [],
): void {
  if (existsSync(to) && readdirSync(to).length > 0) throw invalidArgument(`checkpoint directory ${to} is not empty`);
  try {
    mkdirSync(to, { recursive: true });
    for (const [, f] of edit.newFiles) linkOrCopy(tableFileName(from, f.number), tableFileName(to, f.number));
    for (const n of retained) linkOrCopy(logFileName(from, n), logFileName(to, n));
    for (const n of logs) copyFileSync(logFileName(from, n), logFileName(to, n));
    // File numbers: the manifest and CURRENT's temporary take the next two; later numbers start after them.
    const manifestNumber = edit.nextFileNumber!;
    const tempNumber = manifestNumber + 1;
    edit.nextFileNumber = manifestNumber + 2;
    const manifest = new RecordWriter(manifestFileName(to, manifestNumber));
    try {
      const bytes = edit.encode();
      manifest.addRecord(bytes, 0, bytes.length);
      manifest.writePending();
      manifest.syncNow();
    } finally {
      manifest.close();
    }
    setCurrentFile(to, manifestNumber, tempNumber);
    syncDirectory(to);
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw ioError('checkpoint to', to, err);
  }
}

/** Hard-links `src` as `dst`, or copies it when they are on different file systems. */
function linkOrCopy(src: string, dst: string): void {
  try {
    linkSync(src, dst);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    copyFileSync(src, dst);
  }
}
