/**
 * Bytes a directory takes on disk, as `du` counts them: allocated blocks (st_blocks × 512), not apparent sizes,
 * so that sparse files (lmdb's memory map) count what they really occupy and preallocated logs count in full.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Sum of allocated bytes of every file and directory under `dir` (symbolic links are not followed). */
export async function diskUsage(dir: string): Promise<number> {
  const stats = await lstat(dir);
  let bytes = stats.blocks * 512;
  if (!stats.isDirectory()) return bytes;
  for (const entry of await readdir(dir)) bytes += await diskUsage(join(dir, entry));
  return bytes;
}
