import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diskUsage, entryUsage } from './disk-usage.js';

describe('diskUsage', () => {
  let dir = '';
  afterEach(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('counts allocated blocks of nested files', async () => {
    dir = await mkdtemp(join(tmpdir(), 'bench-du-'));
    const empty = await diskUsage(dir);
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'a'), Buffer.alloc(100_000, 1));
    const used = await diskUsage(dir);
    expect(used - empty).toBeGreaterThanOrEqual(100_000);
    expect(used - empty).toBeLessThan(100_000 + 64 * 1024);
  });

  it('counts an entry deleted between the listing and its lstat as 0 bytes, and still refuses a missing root', async () => {
    dir = await mkdtemp(join(tmpdir(), 'bench-du-'));
    // What diskUsage meets when a running store deletes an obsolete log after readdir listed it.
    expect(await entryUsage(join(dir, '000005.log'))).toBe(0);
    await expect(diskUsage(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
