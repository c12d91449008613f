import { copyFileSync, linkSync } from 'node:fs';

/**
 * Hard-links `src` as `dst`, or copies it when they are on different file systems (EXDEV), so a checkpoint costs no
 * copy where it can. Throws what `link` or `copyFile` throws otherwise (EEXIST when `dst` exists).
 */
export function linkOrCopy(src: string, dst: string): void {
  try {
    linkSync(src, dst);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    copyFileSync(src, dst);
  }
}
