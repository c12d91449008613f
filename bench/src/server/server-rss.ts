/**
 * The resident memory of a server process, read from `/proc/<pid>/status` (Linux), so that the table shows what
 * each server costs in memory for the same N records. Elsewhere the row is left out.
 */
import { readFile } from 'node:fs/promises';
import type { RunContext } from '../harness/benchmark.js';

/** Reports the server's `VmRSS` as `rss` of `caseName`; does nothing where /proc is not readable. */
export async function reportServerRss(ctx: RunContext, pid: number | undefined, caseName: string): Promise<void> {
  if (pid === undefined) return;
  let status: string;
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return;
  }
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (match === null) return;
  ctx.record({ case: caseName, metric: 'rss', value: Number(match[1]) * 1024, unit: 'B', better: 'lower' });
}
