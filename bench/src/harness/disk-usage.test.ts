import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diskUsage } from './disk-usage.js';

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

  it('counts nothing for files deleted while it runs, as a store does in the background', async () => {
    dir = await mkdtemp(join(tmpdir(), 'bench-du-'));
    const names = Array.from({ length: 500 }, (_, i) => join(dir, `f${i}`));
    await Promise.all(names.map((f) => writeFile(f, 'x')));
    const measuring = diskUsage(dir);
    await Promise.all(names.map((f) => rm(f)));
    expect(await measuring).toBeGreaterThan(0);
    await expect(diskUsage(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
