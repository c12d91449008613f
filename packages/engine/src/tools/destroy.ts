/**
 * `destroyDatabase(dir)`: removes a database (LevelDB's DestroyDB). Only the engine's own files go (tables, logs,
 * manifests, CURRENT, temporaries, then LOCK), under the directory's lock, so that a database some engine holds
 * open is refused; anything else in the directory stays (a `lost/` folder of repair's, the user's files), and the
 * directory itself is removed only when that leaves it empty.
 */
import { readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { READERS_FILE } from '../background/reader-pins.js';
import { ioError } from '../base/errors.js';
import { FileType, LOCK_FILE, parseFileName } from '../base/filenames.js';
import { LockFile } from '../open/lock-file.js';

/**
 * Deletes the engine's files in `dir` (see the top of the file). Resolves at once if `dir` does not exist. Rejects
 * with EngineError LOCKED when an open engine holds `dir` (nothing is deleted), or IO.
 */
export async function destroyDatabase(dir: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw ioError('listing', dir, err);
  }
  const lock = LockFile.acquire(dir);
  try {
    for (const name of names) {
      const f = parseFileName(name);
      if (f === undefined || f.type === FileType.Lock) continue;
      const path = join(dir, name);
      try {
        unlinkSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('deleting', path, err);
      }
    }
  } finally {
    lock.release();
  }
  // The database is gone: its READERS and LOCK can go too (an open racing this one finds no CURRENT and creates a
  // new database).
  try {
    unlinkSync(join(dir, READERS_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('deleting', join(dir, READERS_FILE), err);
  }
  try {
    unlinkSync(join(dir, LOCK_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('deleting', join(dir, LOCK_FILE), err);
  }
  try {
    rmdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw ioError('removing', dir, err);
  }
}
