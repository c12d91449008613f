/**
 * The directory lock: at most one open engine per directory, across this process and others.
 *
 * `LOCK` holds the decimal pid of the owner. It is created atomically (written under a temporary name, then
 * hard-linked to `LOCK`, which fails if `LOCK` exists), so it is never seen half-written. A `LOCK` whose pid is this
 * process means an open in this process; one whose pid is alive means another process; one whose pid is dead (a
 * crashed owner) is stale and is taken over. No module-level state is needed: the pid in the file is the registry.
 *
 * Limits: a stale lock whose pid has been reused by an unrelated live process is reported as locked (remove LOCK by
 * hand after checking); two processes taking over the same stale lock at the same instant may both succeed (the
 * window is one unlink and one link).
 */
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, ErrorCodes, ioError } from '../base/errors.js';
import { LOCK_FILE } from '../base/filenames.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class LockFile {
  readonly path: string;
  private held = true;

  private constructor(path: string) {
    this.path = path;
  }

  /**
   * Takes the lock of `dir`. Throws EngineError HEAPLESS_ERR_LOCKED naming the directory and the holder's pid when
   * another live open holds it, or HEAPLESS_ERR_IO. The caller must `release()` it.
   */
  static acquire(dir: string): LockFile {
    const path = join(dir, LOCK_FILE);
    const tmp = join(dir, `${LOCK_FILE}.${process.pid}.tmp`);
    try {
      writeFileSync(tmp, String(process.pid));
    } catch (err) {
      throw ioError('writing', tmp, err);
    }
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          linkSync(tmp, path);
          return new LockFile(path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError('creating', path, err);
        }
        let holder = Number.NaN;
        try {
          holder = Number(readFileSync(path, 'utf8'));
        } catch {
          // Released between our link and our read: try again.
        }
        const stale = !(Number.isInteger(holder) && holder > 0 && alive(holder));
        if (!stale || attempt > 0) {
          const who = holder === process.pid ? 'this process' : `process ${holder}`;
          throw new EngineError(ErrorCodes.LOCKED, `database directory ${dir} is locked by ${who} (${path})`);
        }
        try {
          unlinkSync(path);
        } catch {
          // Someone else took it over first; the next attempt finds out who.
        }
      }
    } finally {
      try {
        unlinkSync(tmp);
      } catch {
        // Already gone.
      }
    }
  }

  /** Removes the lock. Idempotent. */
  release(): void {
    if (!this.held) return;
    this.held = false;
    try {
      unlinkSync(this.path);
    } catch {
      // Removed by hand: nothing to release.
    }
  }
}
