/**
 * A reader's view of a directory that another process (the writer) may hold open and write: what read-only engines
 * (`readOnly: true`) and followers (`openFollower`, `catchUp()`) read. It never writes, creates, renames or deletes a
 * file and takes no lock.
 *
 * `refresh()` brings the view to the writer's latest state on disk, and every view it installs is a state the
 * writer had, because of the order it reads in:
 *
 * 1. the manifest (version/manifest-tail.ts): the tables, and the oldest WAL still needed (`logNumber`);
 * 2. what keeps the tables listed from the writer's later deletions: on Linux, with a `READERS` file, a lock on the
 *    byte of the state's generation (reader-pins.ts: the writer deletes no table while a reader holds an older
 *    generation; the first refresh holds byte 0 from before step 1, so nothing is deleted under it), and a listing of
 *    the directory checks that they are all there; elsewhere, a descriptor of every table (table-files.ts). A table
 *    already gone means the manifest has moved on: start again (if the manifest has not changed, the directory lacks
 *    a table its manifest lists: CorruptionError, as a writer's open says);
 * 3. the WALs numbered from `logNumber` up, newest first (wal-tail.ts): the writer writes nothing to a log before the
 *    previous one is complete and synced, so if a newer log holds records, the older one read after it is whole, and
 *    what is read is a prefix of the writes; a log gone means it was retired by an edit read in step 1's next round;
 * 4. the manifest again: if an edit came in meanwhile (a flush may have retired a log read only in part), start again.
 *
 * Each WAL is followed from where the last refresh stopped, and ends at its last whole record (a record being written
 * is read next time). Reads see sequence numbers up to the highest replayed (or, with no log record at all, the
 * manifest's), which only grows.
 *
 * Ownership: the view owns its pins or table descriptors and its memtables; `close()` drops them. After a refresh
 * the caller runs `collect()`, which lets go of the tables (or the generations) only older versions listed.
 */
import { readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { ReaderPins } from '../background/reader-pins.js';
import { CorruptionError, EngineError, ErrorCodes, ioError } from '../base/errors.js';
import { FileType, parseFileName, tableFileName } from '../base/filenames.js';
import type { ResolvedOptions } from '../base/options.js';
import { Memtable } from '../memtable/memtable.js';
import { ManifestTail } from '../version/manifest-tail.js';
import type { Version } from '../version/version.js';
import { type FileMetaData, VersionEdit } from '../version/version-edit.js';
import { VersionSet } from '../version/version-set.js';
import { MemtableSet } from '../write/memtables.js';
import { TableFiles } from './table-files.js';
import { WalTail } from './wal-tail.js';

/** Rounds of `refresh` before it gives up on a writer that changes its manifest faster than it can be read. */
const MAX_ROUNDS = 1000;

export class LiveView {
  readonly dir: string;
  readonly versions: VersionSet;
  readonly memtables = new MemtableSet(new Memtable(0), 0);
  readonly tables: TableFiles;
  private readonly manifest: ManifestTail;
  private readonly options: ResolvedOptions;
  /** The WALs followed, by number. */
  private readonly logs = new Map<number, WalTail>();
  /**
   * Where the writer keeps this reader's tables for it (background/reader-pins.ts): the generations of the versions installed
   * and not yet collected. Undefined: the view holds a descriptor of each table instead.
   */
  private readonly pins: ReaderPins | undefined;
  private readonly pinned: { version: Version; generation: number }[] = [];

  constructor(dir: string, options: ResolvedOptions) {
    this.dir = dir;
    this.options = options;
    this.versions = new VersionSet(dir, options.numLevels);
    this.manifest = new ManifestTail(dir, options.numLevels);
    this.tables = new TableFiles(dir);
    this.pins = ReaderPins.open(dir);
  }

  /** True when the writer keeps this view's tables (reader pins); false when the view holds their descriptors. */
  get pinsTables(): boolean {
    return this.pins !== undefined;
  }

  /**
   * Brings the view to the writer's latest state on disk (see the top of the file). Throws CorruptionError (a
   * damaged manifest edit or WAL record, a table the manifest lists missing) or EngineError IO (also when the writer kept changing the manifest through
   * MAX_ROUNDS rounds); the view is then as it was.
   */
  refresh(): void {
    const pins = this.pins;
    // The first view: no deletion while the manifest is read (byte 0 is below every generation).
    const opening = pins !== undefined && this.pinned.length === 0;
    if (opening) pins.pin(0);
    try {
      this.refreshRounds();
    } finally {
      if (opening) pins.unpin(0);
    }
  }

  private refreshRounds(): void {
    const m = this.manifest;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (!m.read()) continue;
      const numbers: number[] = [];
      if (this.pins === undefined) for (const level of m.levels) for (const n of level.keys()) numbers.push(n);
      let missing = this.tables.hold(numbers);
      if (missing === undefined) {
        let names: string[];
        try {
          names = readdirSync(this.dir);
        } catch (err) {
          throw ioError('listing', this.dir, err);
        }
        const wanted: number[] = [];
        const tables = new Set<number>();
        for (const name of names) {
          const f = parseFileName(name);
          if (f?.type === FileType.Log && f.number >= m.logNumber) wanted.push(f.number);
          else if (f?.type === FileType.Table) tables.add(f.number);
        }
        // With pins, the listing is the check that every table listed is there (held descriptors prove it otherwise).
        if (this.pins !== undefined) missing = firstMissing(m.levels, tables);
        if (missing === undefined && this.readLogs(wanted)) {
          if (!m.unchanged()) continue;
          // Pinned before it is installed, while the older pins (or byte 0) still hold everything it lists.
          this.pins?.pin(m.generation);
          this.install(wanted);
          if (this.pins !== undefined) this.pinned.push({ version: this.versions.current, generation: m.generation });
          return;
        }
      }
      if (missing !== undefined && m.unchanged()) {
        throw new CorruptionError(
          m.path,
          0,
          `${basename(m.path)} lists table ${basename(tableFileName(this.dir, missing))}, which is missing: the manifest does not match the directory`,
        );
      }
    }
    throw new EngineError(
      ErrorCodes.IO,
      `${this.dir}: the writer changed its manifest during each of ${MAX_ROUNDS} attempts to read it`,
    );
  }

  /** Reads the WALs `wanted` (newest first) on from where each stopped; false when one is gone (retired meanwhile). */
  private readLogs(wanted: number[]): boolean {
    wanted.sort((a, b) => b - a);
    for (const n of wanted) {
      let tail = this.logs.get(n);
      if (tail === undefined) {
        tail = new WalTail(this.dir, n, this.options.writeBufferSize);
        this.logs.set(n, tail);
      }
      if (!tail.read()) return false;
    }
    return true;
  }

  /** Makes what the last round read the current version and memtables (`logs`: the WALs it read, newest first). */
  private install(logs: readonly number[]): void {
    const m = this.manifest;
    const edit = new VersionEdit();
    const current = this.versions.current;
    current.files.forEach((files, level) => {
      const now = m.levels[level]!;
      const kept = new Set<FileMetaData>();
      for (const f of files) {
        if (now.get(f.number) === f) kept.add(f);
        else edit.deleteFile(level, f.number);
      }
      for (const f of now.values()) if (!kept.has(f)) edit.addFile(level, f);
    });
    edit.logNumber = m.logNumber;
    this.versions.applyUnlogged(edit);
    let sequence = m.lastSequence;
    const memtables: Memtable[] = [];
    for (const n of [...this.logs.keys()].sort((a, b) => a - b)) {
      const tail = this.logs.get(n)!;
      // Retired: its writes are in the tables now.
      if (n < m.logNumber || !logs.includes(n)) {
        this.logs.delete(n);
        continue;
      }
      memtables.push(...tail.memtables);
    }
    let replayed = 0;
    for (const tail of this.logs.values()) replayed = Math.max(replayed, tail.maxSequence);
    if (replayed > 0) sequence = replayed;
    this.versions.lastSequence = Math.max(this.versions.lastSequence, sequence);
    this.memtables.replaceAll(memtables);
  }

  /**
   * Closes the descriptors of tables no version of the view lists any more (after a refresh, or an iterator's
   * close), and returns their numbers, so that the caller drops their readers too.
   */
  collect(): number[] {
    const live = this.versions.liveTableNumbers();
    if (this.pins !== undefined) {
      const current = this.versions.current;
      for (let i = this.pinned.length - 1; i >= 0; i--) {
        const p = this.pinned[i]!;
        if (p.version === current || p.version.referenced) continue;
        this.pins.unpin(p.generation);
        this.pinned.splice(i, 1);
      }
    }
    return this.tables.release(live);
  }

  /** The generations this view pins (reader-pins.ts); empty when it holds table descriptors. */
  get pinnedGenerations(): number[] {
    return this.pins?.generations ?? [];
  }

  /** Closes every table descriptor and drops the pins. Idempotent. */
  close(): void {
    this.tables.close();
    this.pins?.close();
    this.pinned.length = 0;
  }
}

/** The first table some level lists that `present` lacks, or undefined. */
function firstMissing(
  levels: readonly ReadonlyMap<number, FileMetaData>[],
  present: ReadonlySet<number>,
): number | undefined {
  for (const level of levels) for (const n of level.keys()) if (!present.has(n)) return n;
  return undefined;
}
