import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, EngineError } from '../base/errors.js';
import { tableFileName } from '../base/filenames.js';
import work from './compaction-worker.js';
import { JobPool, rebuildJobError, WORKER_ENTRY } from './job-pool.js';

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
      code: 'HEAPLESS_ERR_ENGINE_IO',
      message: expect.stringMatching(/^background job failed: /),
    });
    expect(pool.threads).toBeGreaterThan(0);
    await pool.close();
    expect(pool.threads).toBe(0);
    await expect(pool.run({ kind: 'nope' } as never)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' });
    const early = new JobPool();
    early.warmUp();
    await early.close(); // its thread is still starting
    await early.close(); // idempotent
    expect(early.threads).toBe(0);
    await new JobPool().close(); // never started
  });

  it('answers a failed job with { ok: false, reason } as plain data, which the pool turns back into the typed error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-pool-'));
    try {
      writeFileSync(tableFileName(dir, 7), 'not a table at all, and longer than a footer is'.repeat(2));
      const task = {
        kind: 'compact' as const,
        dir,
        inputs: [7],
        outputNumbers: [8],
        deeper: [],
        smallestSnapshot: 0,
        expiryFilter: null,
        now: 0,
        targetFileSize: 1 << 20,
        builder: {},
      };
      const outcome = work(task);
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(JSON.parse(JSON.stringify(outcome.reason))).toEqual(outcome.reason); // survives structured cloning
      const err = rebuildJobError(outcome.reason);
      expect(err).toBeInstanceOf(CorruptionError);
      expect(err).toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CORRUPTION', file: tableFileName(dir, 7) });
      expect(err.message).toBe(outcome.reason.message);
      const missing = work({ ...task, inputs: [9] });
      expect(missing.ok).toBe(false);
      // A corruption error too (the manifest lists a table the directory lacks).
      if (!missing.ok) expect(rebuildJobError(missing.reason)).toBeInstanceOf(CorruptionError);
      // An error without an engine code becomes IO; an unknown code is not trusted either.
      expect(rebuildJobError({ name: 'TypeError', message: 'x is not a function' })).toMatchObject({
        code: 'HEAPLESS_ERR_ENGINE_IO',
        message: 'background job failed: x is not a function',
      });
      const e = rebuildJobError({ name: 'EngineError', code: 'HEAPLESS_ERR_ENGINE_NOPE', message: 'm' });
      expect([e instanceof EngineError, (e as EngineError).code]).toEqual([true, 'HEAPLESS_ERR_ENGINE_IO']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
