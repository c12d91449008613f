/**
 * The private copy that `heapless checkpoint publish` makes of a data directory (DIR.publish-XXXXXX, beside it),
 * and the removal of the copies that a killed run left behind.
 *
 * A copy is as large as the directory's engine, so one left by a crash (kill -9, an OOM kill, a power cut) must not
 * stay for ever. Each copy holds a file naming its owner (host name and process id); a later run removes the copies
 * whose owner is a process of this host that no longer exists, as git's `gc.pid` does. A copy of another host (a
 * directory on a shared file system) or of a live process is left alone, and so is a copy with no owner file that
 * can be read, unless it is older than a minute: its owner may be between making it and writing the file.
 */

import { mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/** The file in a copy that names its owner: `{ host, pid }` as JSON. */
export const COPY_OWNER_FILE = 'PUBLISHER';

/** How old a copy without an owner file must be to count as abandoned. */
const UNOWNED_GRACE_MS = 60_000;

/** Makes this process's copy directory beside `data`, with its owner file; returns its path. */
export async function makePublishCopy(data: string): Promise<string> {
  const copy = await mkdtemp(`${resolve(data)}.publish-`);
  // Written beside and renamed, so that the owner file is whole whenever it exists: a run killed between creating
  // it and writing it would otherwise leave an empty one.
  const owner = join(copy, COPY_OWNER_FILE);
  await writeFile(`${owner}.tmp`, JSON.stringify({ host: hostname(), pid: process.pid }));
  await rename(`${owner}.tmp`, owner);
  return copy;
}

/**
 * Removes the copies of `data` left by runs that died (see the top of the file); returns their paths. Never throws
 * for a copy it cannot read or remove (another run may be removing it too): it leaves it for a later run.
 */
export async function removeAbandonedCopies(data: string, now = Date.now()): Promise<string[]> {
  const full = resolve(data);
  const parent = dirname(full);
  const prefix = `${basename(full)}.publish-`;
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const copy = join(parent, name);
    if (!(await abandoned(copy, now))) continue;
    try {
      await rm(copy, { recursive: true, force: true });
      removed.push(copy);
    } catch {
      // Left for a later run.
    }
  }
  return removed;
}

async function abandoned(copy: string, now: number): Promise<boolean> {
  let owner: { host?: unknown; pid?: unknown } | undefined;
  try {
    owner = JSON.parse(await readFile(join(copy, COPY_OWNER_FILE), 'utf8')) ?? undefined;
  } catch {
    owner = undefined;
  }
  if (owner === undefined || typeof owner !== 'object') {
    try {
      return (await stat(copy)).mtimeMs < now - UNOWNED_GRACE_MS;
    } catch {
      return false;
    }
  }
  const { host, pid } = owner;
  if (host !== hostname() || typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return false;
  return !processExists(pid);
}

/** Whether a process `pid` exists on this host (one of another user counts: EPERM). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
