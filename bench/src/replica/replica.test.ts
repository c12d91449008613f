import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonReport } from '../harness/report-json.js';

const CLI = new URL('../../dist/cli.js', import.meta.url);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-bench-replica-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Command lines of the processes that name `path` (their store directories are under it). */
function processesNaming(path: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (args.includes(path)) found.push(args);
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

describe('replica', () => {
  // The built benchmark, end to end on a small data set: both systems read every message and every checkpoint
  // byte (the workload checks counts and sizes), report both cases, and stop the nats-server they started.
  it('runs every phase of every system at a small size and leaves no nats-server behind', () => {
    const json = join(dir, 'out.json');
    const r = spawnSync(
      process.execPath,
      [CLI.pathname, 'replica', '--records', '2000', '--runs', '1', '--json', json],
      {
        encoding: 'utf8',
        cwd: dir,
        // The runs' data directories, and so the servers' stores, are made under `dir`.
        env: { ...process.env, TMPDIR: dir },
        timeout: 280_000,
      },
    );
    expect(r.stderr).not.toMatch(/failed|not available/);
    expect(r.status).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as JsonReport;
    for (const system of ['replica', 'nats-js']) {
      const rows = report.rows.filter((row) => row.system === system);
      expect([...new Set(rows.map((row) => row.case))].sort(), system).toEqual([
        'consume (~500 B messages, empty handler)',
        'download checkpoint',
      ]);
      for (const row of rows) expect(row.value, `${system} ${row.case}`).toBeGreaterThan(0);
    }
    // The follower's rows: its three starts, their floors, the goals' ratios and the write latencies.
    const follower = report.rows.filter((row) => row.system === 'follower');
    expect(new Set(follower.map((row) => row.case))).toEqual(
      new Set([
        'start: full replay',
        'start: checkpoint + last 1%',
        'start: restart, local data + small lag',
        'floor: checkpoint download',
        'floor: consume, empty handler',
        'floor: local image load',
        'goal: apply rate ÷ empty-handler consume (≥ 0.5)',
        'goal: checkpoint start ÷ (download + tail replay) (≤ 1.5)',
        'goal: restart ÷ local image load (≤ 2)',
        'goal: full replay ÷ checkpoint start (≥ 10 at 1M)',
        'set through the log depth 1',
        'set through the log depth 16',
        'set local depth 1',
        'set local depth 16',
        'set through the log ÷ local, depth 1',
        'set through the log ÷ local, depth 16',
      ]),
    );
    for (const row of follower) expect(row.value, `follower ${row.case} ${row.metric}`).toBeGreaterThan(0);
    expect(processesNaming(dir)).toEqual([]);
  }, 300_000);
});
