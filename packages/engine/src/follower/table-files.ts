/**
 * The tables a read-only engine or a follower holds open, so that they stay readable after the writer deletes them
 * (a compaction's inputs): one descriptor per table some version of the reader lists, taken when the version is
 * installed and closed once no version lists it. An open descriptor keeps an unlinked file's bytes; the table cache
 * opens its readers through `/proc/self/fd/N` (Linux), which reaches them after the name is gone. Where there is no
 * `/proc/self/fd`, readers open the table by name, and a table deleted before its first read fails that read.
 *
 * Opening a descriptor reads nothing: a version of N tables costs N open(2) calls, no read.
 *
 * Ownership: `close()` closes every descriptor.
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import { ioError } from '../base/errors.js';
import { tableFileName } from '../base/filenames.js';

const PROC_FD = '/proc/self/fd';

export class TableFiles {
  private readonly dir: string;
  private readonly fds = new Map<number, number>();
  private readonly viaProc = existsSync(PROC_FD);

  constructor(dir: string) {
    this.dir = dir;
  }

  /**
   * Takes a descriptor of every table in `numbers` not held yet. Returns the number of one that is missing (the
   * writer deleted it: its manifest has moved on, or the directory is damaged), else undefined; those taken stay
   * held. Throws EngineError IO for any other failure.
   */
  hold(numbers: Iterable<number>): number | undefined {
    for (const n of numbers) {
      if (this.fds.has(n)) continue;
      const path = tableFileName(this.dir, n);
      try {
        this.fds.set(n, openSync(path, 'r'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return n;
        throw ioError('opening', path, err);
      }
    }
    return undefined;
  }

  /** Closes the descriptors of the tables not in `live`; returns their numbers. */
  release(live: ReadonlySet<number>): number[] {
    const released: number[] = [];
    for (const [n, fd] of this.fds) {
      if (live.has(n)) continue;
      this.fds.delete(n);
      closeQuietly(fd);
      released.push(n);
    }
    return released;
  }

  /** The path a reader of table `n` opens: its descriptor's, where it has one and /proc allows, else its name. */
  pathOf(n: number): string {
    const fd = this.fds.get(n);
    return fd !== undefined && this.viaProc ? `${PROC_FD}/${fd}` : tableFileName(this.dir, n);
  }

  /** Descriptors held now. */
  get size(): number {
    return this.fds.size;
  }

  /** Closes every descriptor. Idempotent. */
  close(): void {
    for (const fd of this.fds.values()) closeQuietly(fd);
    this.fds.clear();
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Gone either way.
  }
}
