import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JobPool, WORKER_ENTRY } from './job-pool.js';

describe('JobPool', () => {
  // The root of the abort a close could cause: piscina require()s the module each thread loads, and terminating a
  // thread while require() instantiates an ES module graph kills the process. With require(esm) turned off, such a
  // synchronous load fails outright: the entry must load without one.
  it('loads its threads through an entry that require() loads without loading any ES module', () => {
    const entry = fileURLToPath(WORKER_ENTRY);
    const r = spawnSync(
      process.execPath,
      ['--no-experimental-require-module', '-e', `require(${JSON.stringify(entry)}).length === 1 || process.exit(3)`],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('starts no thread until warmed up or run, runs a job on a thread, and close leaves none, even right after the start', async () => {
    const pool = new JobPool();
    expect(pool.threads).toBe(0);
    // Not a real task: the job module answers with its error as data, which shows it loaded and runs; the pool
    // rebuilds it as an engine error.
    await expect(pool.run({ kind: 'nope' } as never)).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_IO',
      message: expect.stringMatching(/^background job failed: /),
    });
    expect(pool.threads).toBeGreaterThan(0);
    await pool.close();
    expect(pool.threads).toBe(0);
    await expect(pool.run({ kind: 'nope' } as never)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_CLOSED' });
    const early = new JobPool();
    early.warmUp();
    await early.close(); // its thread is still starting
    await early.close(); // idempotent
    expect(early.threads).toBe(0);
    await new JobPool().close(); // never started
  });
});
