/**
 * Where a KV checkpoint may go. A caller names a checkpoint; the directory is that name under the checkpoint root
 * the server's operator configured (`KvActorOptions.checkpointRoot`), so that a remote caller — who holds the
 * server's token, but not a shell on its machine — can neither write elsewhere on the file system nor overwrite
 * data: the name is one relative path that stays under the root, and the directory must be new or empty. Without a
 * root, checkpoints are refused. The map itself refuses a directory inside its own (map/map-checkpoint.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { HeaplessError } from '@heapless/client/protocol';

/** Longest checkpoint name: a directory name or short path, not data. */
const MAX_NAME_LENGTH = 255;

/**
 * The directory of checkpoint `name` under `root`. Throws FORBIDDEN without a root, BAD_ARGUMENTS for a name that
 * is not a non-empty relative path staying under the root, or names a directory that exists and is not empty.
 */
export function checkpointDirectory(root: string | undefined, name: unknown): string {
  if (root === undefined) {
    throw new HeaplessError('FORBIDDEN', 'checkpoints are not enabled on this server (no checkpoint root)');
  }
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint(name): a name of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (name.includes('\0') || isAbsolute(name)) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${JSON.stringify(name)} is not a relative path`);
  }
  const dir = resolve(root, name);
  const inside = relative(resolve(root), dir);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint name ${JSON.stringify(name)} leaves the checkpoint root`);
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new HeaplessError('BAD_ARGUMENTS', `checkpoint ${JSON.stringify(name)} exists and is not empty`);
  }
  return dir;
}
