/**
 * Advisory whole-file locks held by an open file, through the operating system: Linux's open-file-description locks
 * (`fcntl(F_OFD_SETLK)`), BSD `flock()` on macOS, `LockFileEx` on Windows, as the npm package `fs-native-extensions`
 * implements them (its prebuilt binaries ship inside the package; nothing is built or downloaded at install). Node has
 * no `flock` of its own.
 *
 * What these locks give that a pid written into a file does not: the lock belongs to the open file, so it is released
 * by the kernel when the descriptor closes or the process dies (even by `kill -9`), a copy of the file carries no lock,
 * and a second descriptor of the same file conflicts even inside the same process (classic POSIX `fcntl` locks would
 * not: they belong to the process, and closing any of its descriptors of the file drops them).
 *
 * The native module is loaded on first use, so that importing the engine loads no addon.
 */
import { createRequire } from 'node:module';

interface NativeLocks {
  tryLock(fd: number, offset?: number, length?: number, opts?: { shared?: boolean }): boolean;
  unlock(fd: number, offset?: number, length?: number): void;
}

// Kept once loaded: createRequire and require's resolution cost a quarter of a millisecond per call, twice per open
// and close, against an open that otherwise takes about one.
let loaded: NativeLocks | undefined;
function locks(): NativeLocks {
  loaded ??= createRequire(import.meta.url)('fs-native-extensions') as NativeLocks;
  return loaded;
}

/**
 * Takes an exclusive lock on the whole file open as `fd` (opened for writing: an exclusive lock needs it) without
 * waiting. Returns false when another open file description, in this process or another, holds a lock on it. Throws
 * the system error for anything else (a bad descriptor, a file system without locks).
 */
export function tryLockExclusive(fd: number): boolean {
  return locks().tryLock(fd);
}

/** Releases the lock taken on `fd` by {@link tryLockExclusive}. Closing `fd` releases it too. */
export function unlockFile(fd: number): void {
  locks().unlock(fd);
}

/**
 * Takes a lock on `length` bytes from `offset` of the file open as `fd` (a lock on bytes that need not exist), shared
 * (`fd` open for reading) or exclusive (`fd` open for writing), without waiting. Returns false when another open file
 * description holds a conflicting lock on any of those bytes. Linux's open-file-description locks only: elsewhere
 * the package locks whole files, which this must not be used for. Throws the system error for anything else.
 */
export function tryLockRange(fd: number, offset: number, length: number, shared: boolean): boolean {
  return locks().tryLock(fd, offset, length, { shared });
}

/** Releases the locks `fd` holds on `length` bytes from `offset`. */
export function unlockRange(fd: number, offset: number, length: number): void {
  locks().unlock(fd, offset, length);
}
