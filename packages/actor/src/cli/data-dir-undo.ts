/**
 * What a failed start of `heapless serve` takes back of its data directory: what that start created, never what
 * was there before. A start opens its data before it binds its port (so that it never answers a request with data
 * it does not have yet), so a port in use (EADDRINUSE), or any other failure after the open, would otherwise leave
 * behind a directory, or a new empty database, that nobody asked to keep.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

/**
 * Looks at `dir` before the start opens it and returns what undoes that open's traces, to be called once the map
 * is closed again: `dir` (or its topmost ancestor) did not exist: it is removed; `dir` was an empty directory: what
 * is in it now is removed and the directory stays; anything else (a database, other files, not a directory): nothing
 * is removed, as the open only did what a restart does. The result never throws: a trace it cannot remove stays.
 *
 * Call the result only after an open that succeeded (the start held the engine's lock while it wrote there): a start
 * whose open failed (LOCKED) must not remove what another process is creating.
 */
export async function dataDirUndo(dir: string): Promise<() => Promise<void>> {
  let topMissing: string | undefined;
  for (let path = resolve(dir); ; path = dirname(path)) {
    if (await exists(path)) break;
    topMissing = path;
    if (dirname(path) === path) break;
  }
  const remove = (path: string) => rm(path, { recursive: true, force: true }).catch(() => {});
  if (topMissing !== undefined) {
    const created = topMissing;
    return () => remove(created);
  }
  const before = await readdir(dir).catch(() => undefined);
  if (before?.length !== 0) return async () => {};
  return async () => {
    for (const name of await readdir(dir).catch(() => [])) await remove(join(dir, name));
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (e) {
    // Anything but "no such file" (a permission error...): taken as there, so never removed.
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
