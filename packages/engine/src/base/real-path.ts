/**
 * Paths compared as the file system resolves them. A directory named through a symbolic link is the directory the
 * link leads to, so "is this target inside that directory" must compare real paths, never path text: `ROOT/link/x`
 * with `ROOT/link -> DATA` is inside DATA.
 */
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ioError } from './errors.js';

/**
 * `path` with every symbolic link in its existing part resolved; the part that does not exist yet is appended as
 * written (it holds no link to resolve). Throws EngineError IO for what `realpath` fails with other than ENOENT
 * (EACCES, ELOOP: a loop of links).
 */
export function realPath(path: string): string {
  const missing: string[] = [];
  let at = resolve(path);
  for (;;) {
    try {
      return join(realpathSync(at), ...missing);
    } catch (err) {
      const parent = dirname(at);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === at) throw ioError('resolving', at, err);
      missing.unshift(basename(at));
      at = parent;
    }
  }
}

/** Whether `path` is the directory `parent` or lies under it, both compared as real paths. Throws as `realPath`. */
export function pathWithin(parent: string, path: string): boolean {
  const inside = relative(realPath(parent), realPath(path));
  return inside === '' || (inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside));
}
