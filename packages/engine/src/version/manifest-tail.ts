/**
 * Following the manifest of a directory that another process (the writer) owns, for read-only opens and followers
 * (follower/live-view.ts): CURRENT names the manifest; its edits are folded into the set of live tables per level and the
 * counters, and a later `read()` goes on from the end of the last whole edit, or starts over when CURRENT names a
 * new manifest (the writer rolled it, or reopened after a crash). An edit the writer is still appending (a torn
 * tail) ends the read quietly and is read whole next time.
 *
 * Nothing here writes, locks or keeps a file open.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptionError, ioError } from '../base/errors.js';
import { CURRENT_FILE } from '../base/filenames.js';
import { RecordReader } from '../record/record-reader.js';
import { type FileMetaData, VersionEdit } from './version-edit.js';

/** The state the manifest's edits so far describe. */
export interface ManifestState {
  /** Live tables per level, by file number. */
  readonly levels: readonly ReadonlyMap<number, FileMetaData>[];
  /** WAL files numbered below this hold nothing the tables do not. */
  readonly logNumber: number;
  readonly lastSequence: number;
}

export class ManifestTail implements ManifestState {
  private readonly dir: string;
  private readonly numLevels: number;
  levels: Map<number, FileMetaData>[];
  logNumber = 0;
  lastSequence = 0;
  private nextFileNumber = 0;
  /** The manifest followed (its name, as CURRENT says it), and the offset just past its last whole edit. */
  private name = '';
  private offset = 0;
  /** The manifest's size when last read (past `offset` while the writer appends an edit). */
  private seenSize = 0;

  constructor(dir: string, numLevels: number) {
    this.dir = dir;
    this.numLevels = numLevels;
    this.levels = this.emptyLevels();
  }

  private emptyLevels(): Map<number, FileMetaData>[] {
    return Array.from({ length: this.numLevels }, () => new Map());
  }

  /** The manifest's name as CURRENT gives it. Throws CorruptionError for a bad CURRENT, EngineError IO. */
  private currentName(): string {
    const path = join(this.dir, CURRENT_FILE);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw ioError('reading', path, err);
    }
    if (!/^MANIFEST-\d+\n$/.test(text)) throw new CorruptionError(path, 0, 'CURRENT does not name a manifest');
    return text.slice(0, -1);
  }

  /**
   * Reads the edits appended since the last call (all of them at first, or when CURRENT names another manifest).
   * Returns false when the manifest CURRENT named was gone by the time it was read (the writer replaced it: call
   * again). Throws CorruptionError (a damaged edit, counters missing, a level out of range) or EngineError IO.
   */
  read(): boolean {
    const name = this.currentName();
    if (name !== this.name) {
      this.name = name;
      this.offset = 0;
      this.levels = this.emptyLevels();
    }
    const path = join(this.dir, name);
    let reader: RecordReader;
    try {
      // Every edit was synced before the writer acted on it: only the last one, being written, may be cut short.
      reader = new RecordReader(path, 'cut', this.offset);
    } catch (err) {
      if (((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
        this.name = '';
        return false;
      }
      throw err;
    }
    for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) this.apply(rec, path, reader.recordOffset);
    this.offset = reader.validLength;
    this.seenSize = reader.fileSize;
    if (this.nextFileNumber === 0) {
      throw new CorruptionError(
        path,
        reader.validLength,
        'manifest lacks the log number, next file number or last sequence',
      );
    }
    return true;
  }

  private apply(rec: Uint8Array, path: string, at: number): void {
    const edit = VersionEdit.decode(rec, path, at);
    if (edit.logNumber !== undefined) this.logNumber = edit.logNumber;
    if (edit.nextFileNumber !== undefined) this.nextFileNumber = edit.nextFileNumber;
    if (edit.lastSequence !== undefined) this.lastSequence = edit.lastSequence;
    for (const [level, number] of edit.deletedFiles) {
      if (level >= this.numLevels) throw new CorruptionError(path, at, `edit names level ${level}`);
      this.levels[level]!.delete(number);
    }
    for (const [level, f] of edit.newFiles) {
      if (level >= this.numLevels) throw new CorruptionError(path, at, `edit names level ${level}`);
      this.levels[level]!.set(f.number, f);
    }
  }

  /**
   * The generation of the state read: its next file number, which grows with every edit that deletes tables
   * (background/reader-pins.ts).
   */
  get generation(): number {
    return this.nextFileNumber;
  }

  /** The path of the manifest last read. */
  get path(): string {
    return join(this.dir, this.name);
  }

  /**
   * True if the manifest is still the one read and has not grown since: no edit came in meanwhile.
   * Throws EngineError IO, CorruptionError for a bad CURRENT.
   */
  unchanged(): boolean {
    if (this.currentName() !== this.name) return false;
    try {
      return statSync(join(this.dir, this.name)).size === this.seenSize;
    } catch {
      return false;
    }
  }
}
