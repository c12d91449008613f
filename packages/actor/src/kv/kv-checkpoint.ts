/**
 * Where a KV checkpoint may go. A caller names a checkpoint; the directory is that name under the checkpoint root
 * the server's operator configured (`KvActorOptions.checkpointRoot`), so that a remote caller — who holds the
 * server's token, but not a shell on its machine — can neither write elsewhere on the file system nor overwrite
 * data: the name is one relative path that stays under the root, and its directory must not exist yet. Without a
 * root, checkpoints are refused. The map itself refuses a directory inside its own (map/map-checkpoint.ts).
 *
 * Symbolic links. A path under the root can still lead out of it through a link someone planted there
 * (`ROOT/link -> /elsewhere`, or `ROOT/data -> the live data directory`), so the name's path is walked from the
 * root's real path one component at a time: a component that exists must be a real directory (lstat: a link is
 * refused, wherever it points), a missing one is created here, and the last one, the checkpoint's own directory,
 * must be created here — `mkdir` fails on anything already at that name, a link included, and never follows one.
 * The engine then writes only inside that new directory.
 *
 * What remains of the check-then-use window: Node has no `openat`, so the engine's writes name files by path, and
 * between the walk (which ends by checking that the new directory's real path is the one it walked) and those
 * writes someone who can write in the root could rename a directory of the name's path and put a link in its place. That needs a local account with write access to the root, which the operator grants
 * (a remote caller cannot make links); the server's own data directory is guarded besides by the map's real-path
 * check, made as the checkpoint starts.
 */
import { lstatSync, mkdirSync, realpathSync, rmdirSync } from 'node:fs';
import { isAbsolute, join, sep } from 'node:path';
import { HeaplessError } from '@heapless/client/protocol';

/** Longest checkpoint name in UTF-8 bytes: a directory name or short path, not data (NAME_MAX of most systems). */
const MAX_NAME_BYTES = 255;

/** What a failed `mkdir` or `lstat` says about the name rather than about the server's storage. */
const NAME_ERRORS = new Set(['EEXIST', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP']);

/**
 * Creates the directory of checkpoint `name` under `root` (see the top of the file) and returns its path. Throws
 * FORBIDDEN without a root; BAD_ARGUMENTS for a name that is not a relative path of 1 to 255 bytes staying under
 * the root, that goes through a symbolic link or a file, or whose directory exists; STORAGE_IO when the root cannot
 * be made or read. The caller removes the directory (`removeCheckpointDirectory`) if the checkpoint then fails.
 */
export function checkpointDirectory(root: string | undefined, name: unknown): string {
  if (root === undefined) {
    throw new HeaplessError('FORBIDDEN', 'checkpoints are not enabled on this server (no checkpoint root)');
  }
  if (typeof name !== 'string' || name.length === 0 || Buffer.byteLength(name) > MAX_NAME_BYTES) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint(name): a name of 1 to ${MAX_NAME_BYTES} bytes`);
  }
  const shown = JSON.stringify(name);
  if (name.includes('\0') || isAbsolute(name)) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${shown} is not a relative path`);
  }
  const parts = name.split(sep === '\\' ? /[\\/]/ : '/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.includes('..')) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${shown} leaves the checkpoint root`);
  }
  let dir = realRoot(root);
  parts.forEach((part, i) => {
    dir = join(dir, part);
    const last = i === parts.length - 1;
    try {
      mkdirSync(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (last && code === 'EEXIST') throw new HeaplessError('BAD_ARGUMENTS', `checkpoint ${shown} exists`);
      if (code === 'EEXIST' && isRealDirectory(dir)) return;
      if (code === 'EEXIST' || NAME_ERRORS.has(code)) {
        throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${shown}: ${part} is not a directory under the root`);
      }
      throw storageError(dir, err);
    }
  });
  // Made, and every component checked: the path must still resolve to itself, or a component was swapped for a link
  // meanwhile (the new directory, empty, is left to the operator: it may no longer be where the walk made it).
  if (realPathOrNull(dir) !== dir) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${shown}: its path changed while it was made`);
  }
  return dir;
}

function realPathOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Removes the directory `checkpointDirectory` made for a checkpoint that failed, if nothing was left in it. */
export function removeCheckpointDirectory(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Not empty: what the failed checkpoint left is kept for the operator to look at.
  }
}

/** Whether `path` is a directory itself, not a symbolic link to one. */
function isRealDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The checkpoint root's real path, made if missing (the operator named it: a link there is theirs to make). */
function realRoot(root: string): string {
  try {
    mkdirSync(root, { recursive: true });
    return realpathSync(root);
  } catch (err) {
    throw storageError(root, err);
  }
}

function storageError(path: string, err: unknown): HeaplessError {
  return new HeaplessError('STORAGE_IO', `checkpoint directory ${path}: ${(err as Error).message}`);
}
