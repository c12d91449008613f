/**
 * How read-only engines and followers keep the tables of their view from being deleted by the writer without opening
 * every table (Linux): the file `READERS` beside `LOCK`, whose bytes stand for the states of the manifest. A reader
 * holds a shared lock on the byte at its view's generation; the writer deletes a table that an edit of generation `e`
 * dropped only when it can take an exclusive lock on every byte below `e`, that is when no reader holds a view from
 * before that edit.
 *
 * The generation of a manifest state is its next file number. The writer makes it grow with every edit that drops
 * tables (version-set.ts, logAndApply), so a table that edit `e` dropped is listed only by states whose generation is
 * below `e`'s: a reader that may need the table holds a byte the writer's test covers, and a reader that has moved
 * past `e` does not hold it back. A table unlisted when the writer opened (left by an earlier run) counts as dropped at
 * the generation of that open. A reader opening holds byte 0 while it reads the manifest (any deletion
 * waits for those few milliseconds), locks its view's byte, then lets byte 0 go; a follower moving to a newer view
 * locks the new byte before it lets the old one go, and keeps the bytes of older views its iterators still read.
 * Deletions the test holds back are made by a later pass (every flush and compaction runs one, and the writer's next
 * open), so a reader costs the writer disk space for as long as it holds an old view, as an open descriptor would.
 *
 * The kernel drops a reader's locks when its descriptor closes or its process dies, so a killed reader pins nothing.
 * A reader falls back to holding a descriptor of every table (table-files.ts) where these locks do not exist (not
 * Linux) or `READERS` does not (no writer of this version has opened the directory).
 */
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { ioError } from '../base/errors.js';
import { tryLockRange, unlockRange } from '../base/file-lock.js';

export const READERS_FILE = 'READERS';

/** True where byte-range locks of open file descriptions exist (Linux's F_OFD_SETLK). */
const RANGE_LOCKS = process.platform === 'linux';

/** The writer's side: the test before deleting tables. */
export class ReaderRegistry {
  private constructor(private fd: number | undefined) {}

  /** Creates or opens `dir/READERS` for the writer (who holds the directory's lock). Throws EngineError IO. */
  static open(dir: string): ReaderRegistry {
    if (!RANGE_LOCKS) return new ReaderRegistry(undefined);
    const path = join(dir, READERS_FILE);
    try {
      // Read-write: an exclusive lock needs a descriptor open for writing.
      return new ReaderRegistry(openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644));
    } catch (err) {
      throw ioError('opening', path, err);
    }
  }

  /**
   * True when no reader holds a view of a generation below `generation`, so that the tables an edit of that
   * generation dropped may be deleted. A lock it cannot test (an error) counts as a reader.
   */
  mayDeleteTables(generation: number): boolean {
    const fd = this.fd;
    if (fd === undefined) return true;
    try {
      if (!tryLockRange(fd, 0, generation, false)) return false;
      unlockRange(fd, 0, generation);
      return true;
    } catch {
      return false;
    }
  }

  /** Closes the file. Idempotent. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Attempts at a lock that a writer's test holds for a moment (microseconds) before it counts as failed. */
const LOCK_ATTEMPTS = 10_000;

/** A reader's side: the bytes of the views it holds. */
export class ReaderPins {
  /** Locks held, by generation, with how many views hold each. */
  private readonly held = new Map<number, number>();

  private constructor(private fd: number | undefined) {}

  /**
   * Opens `dir/READERS` for a reader; undefined where pins do not work (no range locks here, or no such file: the
   * reader then holds table descriptors instead). Throws EngineError IO for a file that exists and cannot be opened.
   */
  static open(dir: string): ReaderPins | undefined {
    if (!RANGE_LOCKS) return undefined;
    const path = join(dir, READERS_FILE);
    if (!existsSync(path)) return undefined;
    try {
      return new ReaderPins(openSync(path, constants.O_RDONLY));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw ioError('opening', path, err);
    }
  }

  /** Holds the view of generation `generation` (byte 0: any view, while the manifest is being read). */
  pin(generation: number): void {
    const n = this.held.get(generation) ?? 0;
    if (n === 0) this.lock(generation);
    this.held.set(generation, n + 1);
  }

  /** Lets go of one hold of `generation`. */
  unpin(generation: number): void {
    const n = this.held.get(generation);
    if (n === undefined) return;
    if (n > 1) this.held.set(generation, n - 1);
    else {
      this.held.delete(generation);
      if (this.fd !== undefined) unlockRange(this.fd, generation, 1);
    }
  }

  /** Generations held now (for tests and stats). */
  get generations(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  private lock(generation: number): void {
    const fd = this.fd;
    if (fd === undefined) throw new Error('ReaderPins used after close');
    for (let i = 0; i < LOCK_ATTEMPTS; i++) {
      try {
        if (tryLockRange(fd, generation, 1, true)) return;
      } catch (err) {
        throw ioError('locking', READERS_FILE, err);
      }
    }
    throw ioError(
      'locking',
      READERS_FILE,
      new Error(`the writer held its test lock through ${LOCK_ATTEMPTS} attempts`),
    );
  }

  /** Closes the file, which drops every lock. Idempotent. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.held.clear();
  }
}
