/**
 * Checkpoints: a consistent, openable copy of a database taken while it runs. Tables are immutable, so they are
 * hard-linked (copied when the target is on another file system); the WALs still needed are copied as they are
 * (a copy that ends in a torn record is fine: recovery drops a torn tail); a fresh manifest describing exactly the
 * linked tables is written, then CURRENT. All synchronous, between two turns of the engine's event loop, so no flush
 * or compaction can change the set of files meanwhile. A checkpoint that fails removes what it wrote, and the
 * directory if it made it: a failure leaves no half copy that could be mistaken for a database.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EngineError, invalidArgument, ioError } from '../base/errors.js';
import { CURRENT_FILE, logFileName, manifestFileName, tableFileName } from '../base/filenames.js';
import { linkOrCopy } from '../base/link-or-copy.js';
import { pathWithin } from '../base/real-path.js';
import { RecordWriter } from '../record/record-writer.js';
import type { VersionEdit } from '../version/version-edit.js';
import { setCurrentFile, syncDirectory } from '../version/version-set.js';

/**
 * Copies the database in `from` into `to` as described by `edit` (a snapshot edit of the current version, whose
 * `logNumber` is the oldest WAL listed in `logs`). `retained`: older logs a retention pin keeps, linked like tables
 * (nothing appends to them; the copy's recovery does not replay them, `updatesSince` reads them). Throws EngineError
 * INVALID_ARGUMENT if `to` exists and is not empty or lies inside `from` (compared as real paths: through a symbolic
 * link too), IO on failure (after removing what it wrote).
 */
export function createCheckpoint(
  from: string,
  to: string,
  edit: VersionEdit,
  logs: readonly number[],
  retained: readonly number[] = [],
): void {
  if (pathWithin(from, to)) {
    throw invalidArgument(`checkpoint directory ${resolve(to)} lies inside the database's directory ${from}`);
  }
  const existed = existsSync(to);
  if (existed && readdirSync(to).length > 0) throw invalidArgument(`checkpoint directory ${to} is not empty`);
  const written: string[] = [];
  const copy = (src: string, dst: string, link: boolean): void => {
    if (link) linkOrCopy(src, dst);
    else copyFileSync(src, dst);
    written.push(dst);
  };
  try {
    mkdirSync(to, { recursive: true });
    for (const [, f] of edit.newFiles) copy(tableFileName(from, f.number), tableFileName(to, f.number), true);
    for (const n of retained) copy(logFileName(from, n), logFileName(to, n), true);
    for (const n of logs) copy(logFileName(from, n), logFileName(to, n), false);
    // File numbers: the manifest and CURRENT's temporary take the next two; later numbers start after them.
    const manifestNumber = edit.nextFileNumber!;
    const tempNumber = manifestNumber + 1;
    edit.nextFileNumber = manifestNumber + 2;
    written.push(manifestFileName(to, manifestNumber), join(to, CURRENT_FILE));
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
    for (const f of written) rmSync(f, { force: true });
    if (!existed) removeEmptyDirectory(to);
    if (err instanceof EngineError) throw err;
    throw ioError('checkpoint to', to, err);
  }
}

/** Removes the directory `dir` if it is empty; one that something else wrote into meanwhile stays as it is. */
function removeEmptyDirectory(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}
