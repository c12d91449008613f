/**
 * Finds a program on `PATH`, so that a benchmark can tell "redis-server is not installed" apart from a failure and
 * skip what needs it.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The full path of `name` in a directory of `PATH`, or else of `extraDirs` (where a package puts it that a user's
 * `PATH` may lack, such as `/usr/sbin`); undefined when none holds an executable of that name.
 */
export function findExecutable(name: string, extraDirs: readonly string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), ...extraDirs]) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** How to get the redis programs on Debian and Ubuntu, for "not available" messages. */
export const REDIS_INSTALL_HINT = 'install with: apt-get install -y redis-server (it brings redis-benchmark too)';
