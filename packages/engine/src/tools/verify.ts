/**
 * `verifyDatabase(dir)`: checks every checksum of every engine file in a directory, without opening the database,
 * taking its lock or changing a byte (RocksDB's `ldb checksum`/`VerifyChecksum`, `sst_dump --command=check`):
 *
 * - tables: the footer, metaindex, index, filter and properties blocks (as an open reads them), then every data
 *   block, each read, checksummed and decompressed; a bad data block does not stop the check of the others;
 * - WALs and manifests: every fragment's checksum and framing; only a last record cut short by the end of the file
 *   passes (what a crash leaves), so a flipped byte anywhere is reported, even in the last record; each WAL record
 *   must hold a well-formed batch and each manifest record a well-formed edit;
 * - CURRENT and the manifest it names against the directory, as open checks them (tables listed are present with
 *   their sizes, the logs the manifest needs exist).
 *
 * A file stops being checked at its first problem in the log formats (what follows cannot be framed with certainty);
 * each problem names the file and the byte offset.
 *
 * It runs beside a live writer (a server holding the directory open) without false alarms:
 *
 * - only the tables the manifest lists are checked: the writer writes a table under its final name, so a table the
 *   manifest does not list may be one being written (or one obsolete, which a writer deletes); those are reported
 *   as skipped;
 * - CURRENT and the manifest are checked against a listing of the directory taken after the manifest was read, and
 *   a failed check counts only if the manifest did not change meanwhile (else it runs again): the writer adds a
 *   table to the manifest after writing it and deletes it after the manifest stops listing it;
 * - a file that fails its check and is gone by then was deleted by the writer (a compaction's input, a retired WAL
 *   or manifest): skipped, not damaged. A file, once opened, is read whole even if it is deleted meanwhile;
 * - the WAL and manifest being appended to end, at worst, in a record cut short, which passes.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptionError, EngineError, ErrorCodes } from '../base/errors.js';
import { FileType, parseFileName, parseListing } from '../base/filenames.js';
import { RecordReader } from '../record/record-reader.js';
import { TableReader } from '../table/table-reader.js';
import { VersionEdit } from '../version/version-edit.js';
import { VersionSet } from '../version/version-set.js';
import { type BatchHandler, batchSequence, replayBatch } from '../write/write-batch.js';

/** A damaged place: the file (a path), the byte offset where the damage was found, and what is wrong. */
export interface VerifyProblem {
  file: string;
  offset: number;
  message: string;
}

/** What was checked in one file. */
export interface VerifiedFile {
  file: string;
  kind: 'table' | 'log' | 'manifest' | 'current';
  /** Data blocks (tables) or records (logs, manifests) whose checksums held. */
  checked: number;
  /** Why the file was not checked, when it was not: not a table of the manifest, or deleted while verify ran. */
  skipped?: string;
}

/** The outcome of `verifyDatabase`: `ok` when no problem was found. */
export interface VerifyReport {
  ok: boolean;
  files: VerifiedFile[];
  problems: VerifyProblem[];
}

/** Options of `verifyDatabase`. */
export interface VerifyOptions {
  /** Called after each file, with how many files are done and how many there are (for progress output). */
  onProgress?: (done: number, total: number, file: string) => void;
}

function problemOf(err: unknown, file: string): VerifyProblem {
  if (err instanceof CorruptionError) return { file: err.file, offset: err.offset, message: err.message };
  return { file, offset: 0, message: err instanceof Error ? err.message : String(err) };
}

const MAX_LEVELS = 20;

/** Ignores a WAL batch's entries: replaying them checks their framing (replayBatch throws CorruptionError). */
const countingHandler: BatchHandler = { put: () => {}, del: () => {} };

/**
 * Checks every engine file of `dir` (see the top of the file). Resolves to the report; rejects only with EngineError
 * NOT_FOUND when `dir` holds no engine file at all, or IO when it cannot be listed.
 */
export async function verifyDatabase(dir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new EngineError(ErrorCodes.NOT_FOUND, `${dir} does not exist: no database to verify`);
    }
    throw new EngineError(ErrorCodes.IO, `listing ${dir} failed: ${(err as Error).message}`, { cause: err });
  }
  const engineFiles = names.filter((n) => {
    const t = parseFileName(n)?.type;
    return t === FileType.Table || t === FileType.Log || t === FileType.Manifest || t === FileType.Current;
  });
  if (engineFiles.length === 0) throw new EngineError(ErrorCodes.NOT_FOUND, `${dir} holds no database files`);
  const files: VerifiedFile[] = [];
  const problems: VerifyProblem[] = [];
  // The manifest's tables, or undefined when the manifest cannot be read (then every table present is checked).
  const live = verifyCurrent(dir, problems);
  let done = 0;
  for (const name of engineFiles) {
    const f = parseFileName(name)!;
    const path = join(dir, name);
    const found = problems.length;
    let file: VerifiedFile;
    if (f.type === FileType.Table) {
      file =
        live === undefined || live.has(f.number)
          ? { file: path, kind: 'table', checked: verifyTable(path, f.number, problems) }
          : { file: path, kind: 'table', checked: 0, skipped: NOT_LISTED };
    } else if (f.type === FileType.Log) file = { file: path, kind: 'log', checked: verifyLog(path, 'log', problems) };
    else if (f.type === FileType.Manifest) {
      file = { file: path, kind: 'manifest', checked: verifyLog(path, 'manifest', problems) };
    } else file = { file: path, kind: 'current', checked: live === undefined ? 0 : 1 };
    if (problems.length > found && f.type !== FileType.Current && !existsSync(path)) {
      // Deleted by a live writer while it was read: no longer part of the database.
      problems.length = found;
      file = { file: path, kind: file.kind, checked: 0, skipped: GONE };
    }
    files.push(file);
    options.onProgress?.(++done, engineFiles.length, path);
  }
  return { ok: problems.length === 0, files, problems };
}

const NOT_LISTED = 'not a table of the manifest (obsolete, or being written)';
const GONE = 'deleted while verify ran';

/** Checks one table; returns the data blocks that passed. */
function verifyTable(path: string, number: number, problems: VerifyProblem[]): number {
  let reader: TableReader;
  try {
    reader = TableReader.open(path, { fileNumber: number, verifyChecksums: true });
  } catch (err) {
    problems.push(problemOf(err, path));
    return 0;
  }
  let good = 0;
  try {
    const index = reader.indexIterator();
    for (index.seekToFirst(); index.valid(); index.next()) {
      let offset = 0;
      try {
        reader.decodeHandle(index);
        offset = reader.handleOffset();
        reader.blockAt(offset, reader.handleSize(), false);
        good++;
      } catch (err) {
        problems.push(problemOf(err, path));
      }
    }
  } catch (err) {
    problems.push(problemOf(err, path));
  } finally {
    reader.close();
  }
  return good;
}

/** Checks a WAL's or a manifest's records; returns how many passed. Stops at the first problem. */
function verifyLog(path: string, kind: 'log' | 'manifest', problems: VerifyProblem[]): number {
  let good = 0;
  try {
    const reader = new RecordReader(path, 'cut');
    const cursor = new Int32Array(1);
    for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
      if (kind === 'manifest') VersionEdit.decode(rec, path, reader.recordOffset);
      else replayBatch(rec, rec.length, batchSequence(rec), countingHandler, cursor, path, reader.recordOffset);
      good++;
    }
  } catch (err) {
    problems.push(problemOf(err, path));
  }
  return good;
}

/** Rounds of the CURRENT check before a manifest that keeps changing under it counts as it was last read. */
const MAX_ROUNDS = 100;

/** CURRENT's text and the size of the manifest it names, which change with every edit a writer makes. */
function manifestMark(dir: string): string {
  try {
    const current = readFileSync(join(dir, 'CURRENT'), 'utf8');
    return `${current}${statSync(join(dir, current.trim())).size}`;
  } catch {
    return '';
  }
}

/**
 * Checks CURRENT and the manifest it names against the directory, as open does (see the top of the file for a live
 * writer); returns the manifest's table numbers if they hold, else undefined, with the problem recorded.
 */
function verifyCurrent(dir: string, problems: VerifyProblem[]): Set<number> | undefined {
  for (let round = 1; ; round++) {
    const mark = manifestMark(dir);
    // The most levels an engine may have (numLevels' bound): a manifest naming a deeper one is damaged.
    const versions = new VersionSet(dir, MAX_LEVELS);
    try {
      versions.recover();
      versions.verifyFiles(parseListing(readdirSync(dir)));
      return versions.liveTableNumbers();
    } catch (err) {
      if (round < MAX_ROUNDS && manifestMark(dir) !== mark) continue;
      problems.push(problemOf(err, join(dir, 'CURRENT')));
      return undefined;
    } finally {
      versions.close();
    }
  }
}
