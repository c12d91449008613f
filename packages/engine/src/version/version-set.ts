/**
 * The version set: the current Version, the versions readers still hold, and the counters that must survive a
 * restart (next file number, last sequence, the oldest WAL still needed), all persisted in the manifest.
 *
 * The manifest is a log (record-format.ts) of version edits (version-edit.ts). `CURRENT` names it; it is replaced by
 * writing a temporary file, fsyncing it, renaming it over `CURRENT` and fsyncing the directory, so that a crash
 * leaves either the old or the new manifest named, never a torn name. An open that recovered something writes a fresh
 * manifest holding one edit with the whole state; an open after a clean close appends to the manifest it read (it
 * has nothing to record); a manifest past 16 MiB is rewritten as one edit, so manifests stay small. An engine that
 * appended edits (flushes, compactions) and leaves more than {@link MANIFEST_ROLL_EDITS} in its manifest rewrites it
 * as one edit at close (`rollAtClose`), so that the next open parses one record, not one per flush and compaction
 * since the database was made; an engine that appended none writes nothing at close.
 *
 * Ownership: the VersionSet owns the manifest's file descriptor; `close()` closes it.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { CorruptionError, closedError, ioError } from '../base/errors.js';
import {
  CURRENT_FILE,
  FileType,
  type ListedFile,
  logFileName,
  manifestBaseName,
  manifestFileName,
  tableFileName,
  tempFileName,
} from '../base/filenames.js';
import { RecordReader } from '../record/record-reader.js';
import { RecordWriter } from '../record/record-writer.js';
import { Version } from './version.js';
import { type FileMetaData, VersionEdit } from './version-edit.js';

/** A manifest past this size is rewritten as one snapshot edit at the next change. */
const MANIFEST_ROLL_SIZE = 16 * 1024 * 1024;
/**
 * A manifest holding more edits than this is rewritten as one at the close of an engine that appended to it: each
 * edit costs an open a record read, a checksum and a decode (a 200,000-document load leaves ~200 of them, ~1.5 ms of
 * every later open), where a few cost nothing measurable and rewriting costs the close three fsyncs.
 */
export const MANIFEST_ROLL_EDITS = 8;

/** fsync of a directory, so that a rename or a new file in it is durable. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class VersionSet {
  readonly dir: string;
  private readonly numLevels: number;
  current: Version;
  /** Versions made current at some point and, until `liveTableNumbers` finds them unreferenced, still held. */
  private readonly live = new Set<Version>();
  nextFileNumber = 2;
  lastSequence = 0;
  /** Tables edits of this VersionSet dropped, with the generation of that edit (see `droppedAt`). */
  private readonly dropped = new Map<number, number>();
  /** WAL files numbered below this hold nothing the tables do not. */
  logNumber = 0;
  manifestNumber = 0;
  private manifest: RecordWriter | undefined;
  /** Edits in the live manifest (those `recover` read, when it is reused, and those appended since). */
  private manifestEdits = 0;
  /** Edits this VersionSet appended to a manifest (`logAndApply`): none means close has nothing to roll. */
  private editsLogged = 0;
  /** The manifest `recover` read, when it may be appended to as it is (see `reuseManifest`). */
  private recovered: { path: string; size: number } | undefined;
  /** Where in the manifest `recover` read each fact that `verifyFiles` checks, for its errors. */
  private provenance: { path: string; tables: Map<number, number>; logNumber: number } | undefined;

  constructor(dir: string, numLevels: number) {
    this.dir = dir;
    this.numLevels = numLevels;
    this.current = new Version(Array.from({ length: numLevels }, () => []));
    this.installCurrent(this.current);
  }

  private installCurrent(v: Version): void {
    v.ref();
    this.live.add(v);
    const old = this.current;
    this.current = v;
    if (old !== v) old.unref();
  }

  /** True if `dir` holds a database (a CURRENT file). */
  static exists(dir: string): boolean {
    return existsSync(join(dir, CURRENT_FILE));
  }

  /**
   * Reads CURRENT and replays the manifest it names into the current version and counters. Throws CorruptionError
   * (bad CURRENT, a damaged edit, missing counters, a table listed twice) or EngineError IO.
   */
  recover(): void {
    const currentPath = join(this.dir, CURRENT_FILE);
    let name: string;
    try {
      name = readFileSync(currentPath, 'utf8');
    } catch (err) {
      throw ioError('reading', currentPath, err);
    }
    const m = /^MANIFEST-(\d+)\n$/.exec(name);
    if (!m) throw new CorruptionError(currentPath, 0, 'CURRENT does not name a manifest');
    const path = join(this.dir, name.slice(0, -1));
    // Every edit was synced before it was acted on: only the last one, cut short, may be one that never counted.
    let reader: RecordReader;
    try {
      reader = new RecordReader(path, 'cut');
    } catch (err) {
      // Asked after the failure, not before every read: an open pays no existence check.
      if (!existsSync(path))
        throw new CorruptionError(currentPath, 0, `CURRENT names ${name.slice(0, -1)}, which is missing`);
      throw err;
    }
    const levels: Map<number, FileMetaData>[] = Array.from({ length: this.numLevels }, () => new Map());
    const tableOffsets = new Map<number, number>();
    let logNumberOffset = 0;
    let logNumber: number | undefined;
    let nextFile: number | undefined;
    let lastSeq: number | undefined;
    let edits = 0;
    for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
      edits++;
      const at = reader.recordOffset;
      const edit = VersionEdit.decode(rec, path, at);
      if (edit.logNumber !== undefined) {
        logNumber = edit.logNumber;
        logNumberOffset = at;
      }
      if (edit.nextFileNumber !== undefined) nextFile = edit.nextFileNumber;
      if (edit.lastSequence !== undefined) lastSeq = edit.lastSequence;
      for (const [level, number] of edit.deletedFiles) {
        if (level >= this.numLevels) throw new CorruptionError(path, at, `edit names level ${level}`);
        levels[level]!.delete(number);
      }
      for (const [level, f] of edit.newFiles) {
        if (level >= this.numLevels) throw new CorruptionError(path, at, `edit names level ${level}`);
        levels[level]!.set(f.number, f);
        tableOffsets.set(f.number, at);
      }
    }
    if (logNumber === undefined || nextFile === undefined || lastSeq === undefined) {
      throw new CorruptionError(
        path,
        reader.validLength,
        'manifest lacks the log number, next file number or last sequence',
      );
    }
    const seen = new Set<number>();
    for (const level of levels) {
      for (const n of level.keys()) {
        if (seen.has(n) || n >= nextFile)
          throw new CorruptionError(path, 0, `table ${n} listed twice or beyond the next file number`);
        seen.add(n);
      }
    }
    this.logNumber = logNumber;
    this.nextFileNumber = nextFile;
    this.lastSequence = lastSeq;
    this.manifestNumber = Number(m[1]);
    this.manifestEdits = edits;
    // Appending after a torn edit would turn it into damage in the middle of the log.
    const whole = reader.validLength === reader.fileSize;
    this.recovered = whole && reader.fileSize < MANIFEST_ROLL_SIZE ? { path, size: reader.fileSize } : undefined;
    this.provenance = { path, tables: tableOffsets, logNumber: logNumberOffset };
    this.installCurrent(new Version(levels.map((l) => [...l.values()])));
  }

  /**
   * Checks the state `recover` read against the directory (`listing`: its engine files, `parseListing`), before recovery deletes or writes
   * anything on the strength of it: a manifest that lost edits (cut at an edit boundary, or an older copy) names
   * tables a later edit deleted, or a log a later edit retired, and acting on it would delete the tables that hold
   * the data. Holds after any crash, since a file is deleted only once an edit that no longer needs it is durable:
   *
   * - every table the manifest lists exists (its size is checked when it is first opened: table/table-cache.ts);
   * - the oldest log it still needs (`logNumber`) exists if any later log does: logs are created in number order,
   *   and the one `logNumber` names is deleted only after an edit naming a later one is durable.
   *
   * Throws CorruptionError naming the manifest, the offset of the edit at fault, and the missing or mismatched file,
   * or EngineError IO; changes nothing. Checks once, after `recover`; a no-op for a new database.
   */
  verifyFiles(listing: readonly ListedFile[]): void {
    const p = this.provenance;
    if (p === undefined) return;
    this.provenance = undefined;
    const manifest = basename(p.path);
    // From the listing: a stat per table would make open cost per table, and a table cut short fails its first read
    // (the table cache checks its size against the manifest's) as surely as it would fail here.
    const tables = new Set<number>();
    for (const f of listing) if (f.type === FileType.Table) tables.add(f.number);
    for (const files of this.current.files) {
      for (const f of files) {
        if (tables.has(f.number)) continue;
        throw new CorruptionError(
          p.path,
          p.tables.get(f.number) ?? 0,
          `${manifest} lists table ${basename(tableFileName(this.dir, f.number))}, which is missing: the manifest does not match the directory`,
        );
      }
    }
    let oldestLog: number | undefined;
    for (const f of listing) {
      if (f.type === FileType.Log && f.number >= this.logNumber && (oldestLog === undefined || f.number < oldestLog))
        oldestLog = f.number;
    }
    if (oldestLog !== undefined && oldestLog !== this.logNumber) {
      throw new CorruptionError(
        p.path,
        p.logNumber,
        `${manifest} needs log ${basename(logFileName(this.dir, this.logNumber))}, which is missing while the later ` +
          `${basename(logFileName(this.dir, oldestLog))} exists: the manifest is older than the directory`,
      );
    }
  }

  /**
   * Makes the manifest `recover` read the live one again: later edits are appended to it. Returns false, changing
   * nothing, when there is none or it cannot be reused as it is (a torn last edit, or past the roll size); the caller
   * then writes a new one. Needs no sync: the manifest is durable already, every edit in it having been synced before
   * it was used, and CURRENT already names it. For an open that has nothing to record. Throws EngineError IO.
   */
  reuseManifest(): boolean {
    const m = this.recovered;
    this.recovered = undefined;
    if (m === undefined) return false;
    this.manifest = new RecordWriter(m.path, 4096, m.size);
    return true;
  }

  /** A number for a new file. */
  newFileNumber(): number {
    return this.nextFileNumber++;
  }

  /** Makes sure future numbers are above `n` (a file found on disk). */
  markFileNumberUsed(n: number): void {
    if (this.nextFileNumber <= n) this.nextFileNumber = n + 1;
  }

  /**
   * Starts a new manifest holding the whole current state and points CURRENT at it (durably). Used at open and when
   * the manifest grows large. Throws EngineError IO; if CURRENT was not switched, the new manifest is removed again.
   */
  writeNewManifest(): void {
    this.recovered = undefined;
    const number = this.newFileNumber();
    const tempNumber = this.newFileNumber();
    const path = manifestFileName(this.dir, number);
    const writer = new RecordWriter(path);
    let named = false;
    try {
      const edit = this.snapshotEdit();
      const bytes = edit.encode();
      writer.addRecord(bytes, 0, bytes.length);
      writer.writePending();
      // Durable before CURRENT names it: a CURRENT naming a manifest whose bytes a crash lost is a database lost.
      writer.syncNow();
      replaceCurrentFile(this.dir, number, tempNumber);
      named = true;
      syncDirectory(this.dir);
    } catch (err) {
      writer.close();
      if (!named) removeQuietly(path);
      throw err;
    }
    this.manifest?.close();
    this.manifest = writer;
    this.manifestNumber = number;
    this.manifestEdits = 1;
  }

  /**
   * For close, once no flush or compaction runs: when this VersionSet appended edits and the live manifest holds more
   * than {@link MANIFEST_ROLL_EDITS}, writes a new manifest of one edit (`writeNewManifest`, durably named by CURRENT)
   * and returns true; the old manifest is then obsolete. Otherwise writes nothing and returns false (always, for an
   * engine that took no writes and ran no compaction). Throws EngineError IO; the old manifest then stays the live one.
   */
  rollAtClose(): boolean {
    if (this.manifest === undefined || this.editsLogged === 0 || this.manifestEdits <= MANIFEST_ROLL_EDITS)
      return false;
    this.writeNewManifest();
    return true;
  }

  /** An edit that recreates the current state from nothing. */
  snapshotEdit(): VersionEdit {
    const edit = new VersionEdit();
    edit.logNumber = this.logNumber;
    edit.nextFileNumber = this.nextFileNumber;
    edit.lastSequence = this.lastSequence;
    this.current.files.forEach((files, level) => {
      for (const f of files) edit.addFile(level, f);
    });
    return edit;
  }

  /**
   * Applies `edit` to the current version, appends it to the manifest (fdatasync'd) and makes the result current.
   * Fills in the counters. On a failed write the current version stays as it was and the error (EngineError IO) is
   * thrown.
   */
  logAndApply(edit: VersionEdit): void {
    if (!this.manifest) throw closedError(`the manifest of ${this.dir}`);
    if (edit.logNumber === undefined) edit.logNumber = this.logNumber;
    // An edit that drops tables gets a next file number above every earlier edit's: the generation from which on no
    // state lists them, by which readers pin the states that still do (background/reader-pins.ts).
    const added = new Set(edit.newFiles.map(([, f]) => f.number));
    const dropped = edit.deletedFiles.map(([, n]) => n).filter((n) => !added.has(n));
    if (dropped.length > 0) this.nextFileNumber++;
    edit.nextFileNumber = this.nextFileNumber;
    for (const n of dropped) this.dropped.set(n, this.nextFileNumber);
    edit.lastSequence = this.lastSequence;
    const next = this.apply(edit);
    const bytes = edit.encode();
    this.manifest.addRecord(bytes, 0, bytes.length);
    this.manifest.writePending();
    this.manifest.syncNow();
    this.manifestEdits++;
    this.editsLogged++;
    this.logNumber = edit.logNumber;
    this.installCurrent(next);
    if (this.manifest.size > MANIFEST_ROLL_SIZE) this.writeNewManifest();
  }

  /**
   * Applies `edit` to the current version in memory only. For open, before `writeNewManifest` records the whole
   * state in one edit.
   */
  applyUnlogged(edit: VersionEdit): void {
    const next = this.apply(edit);
    if (edit.logNumber !== undefined) this.logNumber = edit.logNumber;
    this.installCurrent(next);
  }

  private apply(edit: VersionEdit): Version {
    const deleted = new Set(edit.deletedFiles.map(([level, n]) => level * 2 ** 32 + n));
    const files = this.current.files.map((fs, level) => fs.filter((f) => !deleted.has(level * 2 ** 32 + f.number)));
    for (const [level, f] of edit.newFiles) files[level]!.push(f);
    return new Version(files);
  }

  /**
   * The generation from which on no state of the manifest lists table `n` (reader-pins.ts), if an edit of this
   * VersionSet dropped it; undefined for a table it never listed, or one that was unlisted before the open.
   */
  droppedAt(n: number): number | undefined {
    return this.dropped.get(n);
  }

  /** Table `n` is deleted: its generation is no longer needed. */
  forgetDropped(n: number): void {
    this.dropped.delete(n);
  }

  /** Numbers of the tables some referenced version lists: the tables that must not be deleted. */
  liveTableNumbers(): Set<number> {
    const out = new Set<number>();
    for (const v of this.live) {
      if (!v.referenced) {
        this.live.delete(v);
        continue;
      }
      for (const files of v.files) for (const f of files) out.add(f.number);
    }
    return out;
  }

  /** Closes the manifest. Idempotent. */
  close(): void {
    this.manifest?.close();
    this.manifest = undefined;
  }
}

/** Unlinks `path` if it is there (a file this process just created and no longer wants). */
function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Never created, or already gone.
  }
}

/**
 * Points CURRENT at MANIFEST-`manifestNumber`, durably: `replaceCurrentFile`, then an fsync of the directory.
 * Throws EngineError IO (or the fsync's error).
 */
export function setCurrentFile(dir: string, manifestNumber: number, tempNumber: number): void {
  replaceCurrentFile(dir, manifestNumber, tempNumber);
  // The rename is durable only once the directory is: without this, a crash could bring back the old CURRENT after
  // the caller has gone on to delete what only the old manifest needed (WALs, tables, the old manifest itself).
  syncDirectory(dir);
}

/**
 * Writes `tempNumber`.dbtmp naming MANIFEST-`manifestNumber`, fsyncs it and renames it over CURRENT (the directory
 * is not synced). Throws EngineError IO with CURRENT as it was and the temporary file removed.
 */
function replaceCurrentFile(dir: string, manifestNumber: number, tempNumber: number): void {
  const tmp = tempFileName(dir, tempNumber);
  try {
    const fd = openSync(tmp, 'w');
    try {
      writeFileSync(fd, `${manifestBaseName(manifestNumber)}\n`);
      // Before the rename: otherwise a crash may leave CURRENT renamed but empty (the rename reached the disk, the
      // data did not), and the database would not open.
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(dir, CURRENT_FILE));
  } catch (err) {
    removeQuietly(tmp);
    throw ioError('pointing', `${join(dir, CURRENT_FILE)} at ${manifestBaseName(manifestNumber)}`, err);
  }
}
