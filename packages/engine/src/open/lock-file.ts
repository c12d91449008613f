/**
 * The directory lock: at most one open engine per directory, across this process, other processes and (on file
 * systems whose locks reach the server, such as NFSv4) other hosts.
 *
 * The lock is an OS lock on the open file `LOCK` (see base/file-lock.ts), held from `acquire()` to `release()`: the
 * kernel drops it when the process dies, however it dies, so there is no stale lock to detect and no pid to trust. A
 * copy of a live directory (`cp -r`) carries no lock and opens; a second open of the same directory, in this process
 * or another, is refused. As LevelDB does, `LOCK` is never deleted: deleting it would let one opener lock the old file
 * while another creates and locks a new one.
 *
 * What `LOCK` holds is for people only: `pid host\n` of the last process that took the lock, quoted in the LOCKED
 * error. Nothing reads it to decide anything.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { EngineError, ErrorCodes, ioError } from '../base/errors.js';
import { tryLockExclusive, unlockFile } from '../base/file-lock.js';
import { LOCK_FILE } from '../base/filenames.js';

/** Who the `LOCK` file at `path` says holds it, for the error message. */
function describeHolder(path: string): string {
  let text = '';
  try {
    text = readFileSync(path, 'latin1');
  } catch {
    // Unreadable: say nothing of the holder.
  }
  const m = /^(\d+) (\S+)\n/.exec(text);
  if (m === null) return 'another open';
  if (Number(m[1]) === process.pid && m[2] === hostname()) return `this process (pid ${m[1]})`;
  return `pid ${m[1]} on host ${m[2]}`;
}

export class LockFile {
  readonly path: string;
  private fd: number;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.fd = fd;
  }

  /**
   * Takes the lock of `dir`, creating `LOCK` if needed. Throws EngineError HEAPLESS_ERR_ENGINE_LOCKED naming the directory
   * and, as `LOCK` tells it, the holder's pid and host when another open holds it, or HEAPLESS_ERR_ENGINE_IO. The caller
   * must `release()` it; until then it holds one file descriptor.
   */
  static acquire(dir: string): LockFile {
    const path = join(dir, LOCK_FILE);
    let fd: number;
    try {
      // Read-write: an exclusive lock needs a descriptor open for writing.
      fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
    } catch (err) {
      throw ioError('opening', path, err);
    }
    let locked: boolean;
    try {
      locked = tryLockExclusive(fd);
    } catch (err) {
      closeSync(fd);
      throw ioError('locking', path, err);
    }
    if (!locked) {
      closeSync(fd);
      throw new EngineError(
        ErrorCodes.LOCKED,
        `database directory ${dir} is locked by ${describeHolder(path)} (${path})`,
      );
    }
    const info = Buffer.from(`${process.pid} ${hostname()}\n`, 'latin1');
    try {
      // Rewritten only when it names another holder: an ftruncate and a write cost a reopen in the same process
      // more than the read that spares them.
      const old = Buffer.alloc(info.length + 1);
      if (readSync(fd, old, 0, old.length, 0) !== info.length || !old.subarray(0, info.length).equals(info)) {
        ftruncateSync(fd, 0);
        writeSync(fd, info, 0, info.length, 0);
      }
    } catch {
      // The content only names the holder in messages; the lock is what counts, and it is held.
    }
    return new LockFile(path, fd);
  }

  /** Releases the lock and closes its descriptor. Idempotent; never throws. `LOCK` stays (see the top of this file). */
  release(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    // Closing alone releases the lock; unlocking first says so at once where a close may release it late (Windows).
    try {
      unlockFile(fd);
    } catch {
      // The close below releases it.
    }
    try {
      closeSync(fd);
    } catch {
      // The descriptor is gone either way, and its lock with it.
    }
  }
}
