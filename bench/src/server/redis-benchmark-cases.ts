/**
 * The key-value cases measured by redis-benchmark itself (C, one connection: `-c 1`), to show what redis-server
 * does when the client costs almost nothing: `-P <depth> -t get,set -d 100 -r N -n <count> --csv` per depth, on the
 * same preloaded keys (`key:__rand_int__` with `-r N` names `key:000000000000` … exactly like the preload).
 */
import { execFile } from 'node:child_process';
import type { RunContext } from '../harness/benchmark.js';
import { DEPTHS, kvCaseName, VALUE_BYTES } from './cases.js';
import { LOOPBACK } from './free-port.js';
import { reportCase } from './pipelined-loop.js';
import { parseRedisBenchmarkCsv } from './redis-benchmark-csv.js';

/**
 * Requests per test at each depth: redis-benchmark has no time limit, so these are sized to take a couple of
 * seconds each on this 2-core machine when it is quiet (redis-server answers one connection at roughly 25k, 250k
 * and 1M requests a second at depths 1, 16 and 1000).
 */
const REQUESTS_BY_DEPTH: Readonly<Record<number, number>> = { 1: 50_000, 16: 400_000, 1000: 2_000_000 };
/** Upper bound on one redis-benchmark invocation; it is killed past this. */
const TIMEOUT_MS = 180_000;

/** Runs redis-benchmark at every depth against the redis-server on `port` (already preloaded) and reports. */
export async function runRedisBenchmarkCases(ctx: RunContext, redisBenchmark: string, port: number): Promise<void> {
  for (const depth of DEPTHS) {
    ctx.progress(`redis-benchmark -P ${depth}`, 1).finish();
    const args = ['-h', LOOPBACK, '-p', String(port), '-c', '1', '-P', String(depth), '-t', 'get,set'];
    args.push('-d', String(VALUE_BYTES), '-r', String(ctx.records), '-n', String(REQUESTS_BY_DEPTH[depth]), '--csv');
    const rows = parseRedisBenchmarkCsv(await run(redisBenchmark, args));
    for (const operation of ['get', 'set'] as const) {
      const row = rows.get(operation.toUpperCase());
      if (row === undefined) throw new Error(`redis-benchmark -P ${depth} printed no ${operation.toUpperCase()} line`);
      reportCase(ctx, kvCaseName(operation, depth), {
        opsPerSecond: row.rps,
        p50: row.p50Ms * 1000,
        p99: row.p99Ms * 1000,
      });
    }
  }
}

/** Runs the program to completion and returns its stdout; rejects with its stderr on failure or timeout. */
function run(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: TIMEOUT_MS, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
