import { describe, expect, it } from 'vitest';
import { runRatios, type Series, spread, summarize } from './statistics.js';

describe('spread', () => {
  it('takes the middle value of an odd count and the mean of the two middle values of an even count', () => {
    expect(spread([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3 });
    expect(spread([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4 });
    expect(spread([7])).toEqual({ median: 7, min: 7, max: 7 });
  });

  it('does not reorder its input', () => {
    const values = [3, 1, 2];
    spread(values);
    expect(values).toEqual([3, 1, 2]);
  });

  it('refuses an empty list', () => {
    expect(() => spread([])).toThrow(RangeError);
  });
});

describe('runRatios', () => {
  it('divides run by run and skips runs missing on either side or with a zero baseline', () => {
    expect(runRatios([10, undefined, 30, 40], [5, 10, 0, 20])).toEqual([2, 2]);
  });
});

describe('summarize', () => {
  const series = (system: string, runs: (number | undefined)[], metric = 'ops/s'): Series => ({
    system,
    case: 'put',
    metric,
    unit: 'ops/s',
    better: 'higher',
    runs,
  });

  it('takes the median of per-run ratios, not the ratio of medians', () => {
    // Run 2 was slowed for both systems by a noisy neighbour; per-run ratios stay at 2.
    const rows = summarize([series('base', [100, 10, 100]), series('fast', [200, 20, 200])], 'base');
    const fast = rows.find((r) => r.system === 'fast')!;
    expect(fast.median).toBe(200);
    expect(fast.ratio).toEqual({ median: 2, min: 2, max: 2 });
    expect(rows.find((r) => r.system === 'base')!.ratio!.median).toBe(1);
  });

  it('leaves the ratio out when the baseline lacks the case or metric, and drops empty series', () => {
    const rows = summarize([series('base', [1]), series('other', [5], 'p99'), series('none', [undefined])], 'base');
    expect(rows.map((r) => r.system)).toEqual(['base', 'other']);
    expect(rows[1]!.ratio).toBeUndefined();
  });
});
