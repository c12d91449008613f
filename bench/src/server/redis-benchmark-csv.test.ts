import { describe, expect, it } from 'vitest';
import { parseRedisBenchmarkCsv } from './redis-benchmark-csv.js';

describe('parseRedisBenchmarkCsv', () => {
  it('reads rps and the p50/p99 columns of redis 7', () => {
    const rows = parseRedisBenchmarkCsv(
      [
        '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"',
        '"SET","208333.33","0.064","0.032","0.047","0.111","0.199","3.847"',
        '"GET","253164.55","0.050","0.032","0.047","0.095","0.127","0.351"',
      ].join('\n'),
    );
    expect(rows.get('GET')).toEqual({ test: 'GET', rps: 253164.55, p50Ms: 0.047, p99Ms: 0.127 });
    expect(rows.get('SET')?.rps).toBe(208333.33);
  });

  it('leaves latency as NaN when an older redis-benchmark prints only rps, and skips progress lines', () => {
    const rows = parseRedisBenchmarkCsv('SET: 1000.00\r"test","rps"\n"GET","99.5"\n');
    expect(rows.get('GET')?.rps).toBe(99.5);
    expect(rows.get('GET')?.p50Ms).toBeNaN();
  });

  it('throws on output without a header', () => {
    expect(() => parseRedisBenchmarkCsv('Could not connect to Redis')).toThrow(/no CSV header/);
  });
});
