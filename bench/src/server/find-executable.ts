/**
 * Finds a program on `PATH`, so that a benchmark can tell "redis-server is not installed" apart from a failure and
 * skip what needs it.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The full path of `name` on `PATH`, or undefined when no directory of `PATH` holds an executable of that name. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
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
