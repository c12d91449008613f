/**
 * Parses what `redis-benchmark --csv` prints (redis 7):
 *
 * ```
 * "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
 * "SET","208333.33","0.064","0.032","0.047","0.111","0.199","3.847"
 * ```
 *
 * Progress lines (ended by a bare carriage return) are skipped. Older versions print only `"test","rps"`; their
 * latency columns are then missing (NaN), not invented.
 */

/** One test line: requests per second and latency percentiles in milliseconds (NaN where the CSV has none). */
export interface RedisBenchmarkRow {
  readonly test: string;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Rows by test name in upper case (`GET`, `SET`); throws when there is no header with `test` and `rps`. */
export function parseRedisBenchmarkCsv(text: string): Map<string, RedisBenchmarkRow> {
  const lines = text
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line.startsWith('"'));
  const header = lines.findIndex((line) => line.startsWith('"test"'));
  if (header < 0) throw new Error(`redis-benchmark printed no CSV header:\n${text.slice(0, 500)}`);
  const columns = fields(lines[header]!);
  const at = (name: string) => columns.indexOf(name);
  const [test, rps, p50, p99] = [at('test'), at('rps'), at('p50_latency_ms'), at('p99_latency_ms')];
  if (rps < 0) throw new Error(`redis-benchmark's CSV has no rps column: ${lines[header]}`);
  const rows = new Map<string, RedisBenchmarkRow>();
  for (const line of lines.slice(header + 1)) {
    const cells = fields(line);
    const name = (cells[test] ?? '').toUpperCase();
    const number = (column: number) => (column < 0 ? Number.NaN : Number(cells[column]));
    rows.set(name, { test: name, rps: number(rps), p50Ms: number(p50), p99Ms: number(p99) });
  }
  return rows;
}

/** The cells of one CSV line whose every cell is double-quoted (redis-benchmark quotes all of them). */
function fields(line: string): string[] {
  return [...line.matchAll(/"((?:[^"]|"")*)"/g)].map((match) => match[1]!.replaceAll('""', '"'));
}
