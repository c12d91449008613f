/**
 * Bytes a directory takes on disk, as `du` counts them: allocated blocks (st_blocks × 512), not apparent sizes,
 * so that sparse files (lmdb's memory map) count what they really occupy and preallocated logs count in full.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Sum of allocated bytes of every file and directory under `dir` (symbolic links are not followed). A store that
 * is measured while it runs deletes obsolete files in the background (an LSM's old logs and tables), so a file
 * listed by `readdir` may be gone by its `lstat`: it counts 0, as it takes no space any more. `dir` itself must
 * exist.
 */
export async function diskUsage(dir: string): Promise<number> {
  const stats = await lstat(dir);
  let bytes = stats.blocks * 512;
  if (!stats.isDirectory()) return bytes;
  for (const entry of await readdir(dir)) bytes += await entryUsage(join(dir, entry));
  return bytes;
}

/** `diskUsage(path)`, or 0 when `path` no longer exists. */
export async function entryUsage(path: string): Promise<number> {
  try {
    return await diskUsage(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
