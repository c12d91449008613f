/**
 * Bytes a directory takes on disk, as `du` counts them: allocated blocks (st_blocks × 512), not apparent sizes,
 * so that sparse files (lmdb's memory map) count what they really occupy and preallocated logs count in full.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Sum of allocated bytes of every file and directory under `dir` (symbolic links are not followed). A store keeps
 * working while it is measured (a compaction deleting obsolete files): an entry under `dir` that vanishes between the
 * listing and its `lstat` counts nothing. Throws if `dir` itself cannot be read.
 */
export async function diskUsage(dir: string): Promise<number> {
  const stats = await lstat(dir);
  let bytes = stats.blocks * 512;
  if (!stats.isDirectory()) return bytes;
  for (const entry of await readdir(dir)) {
    try {
      bytes += await diskUsage(join(dir, entry));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return bytes;
}
