import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonReport } from '../harness/report-json.js';
import { usersAtLeast } from './workload.js';

const CLI = new URL('../../dist/cli.js', import.meta.url);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-gc-pressure-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('gc-pressure', () => {
  it('counts the users of a scan from the data itself', () => {
    // Ages run 18..97 in turn: 48 of every 80 users are at least 50.
    expect(usersAtLeast(800, 50)).toBe(480);
    expect(usersAtLeast(0, 50)).toBe(0);
  });

  // The built benchmark, end to end on a small data set, for our systems and the baseline: each passes every check
  // the workload makes (each get finds its user, every scan pass counts the users the data holds, single-threaded
  // and parallel) and reports every phase.
  it('runs every phase at a small size, each check holding', () => {
    const json = join(dir, 'out.json');
    const systems = ['map-object', 'offheap-msgpack', 'offheap-struct'];
    const r = spawnSync(
      process.execPath,
      [CLI.pathname, 'gc-pressure', '--records', '2000', '--runs', '1', '--systems', systems.join(','), '--json', json],
      { encoding: 'utf8', cwd: dir, timeout: 120_000 },
    );
    expect(r.stderr).not.toMatch(/failed/);
    expect(r.status).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as JsonReport;
    for (const system of systems) {
      const cases = new Set(report.rows.filter((row) => row.system === system).map((row) => row.case));
      for (const phase of ['load', 'get', 'get-field', 'scan', 'update']) expect(cases, system).toContain(phase);
    }
    for (const system of ['offheap-msgpack', 'offheap-struct']) {
      expect(
        report.rows.some((row) => row.system === system && row.case === 'scan (parallel)'),
        system,
      ).toBe(true);
    }
  });
});
