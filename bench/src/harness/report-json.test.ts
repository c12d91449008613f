import { describe, expect, it } from 'vitest';
import { buildJsonReport } from './report-json.js';
import { summarize } from './statistics.js';

describe('buildJsonReport', () => {
  it('writes the DESIGN.md shape with the median as value and ratios as extra fields', () => {
    const rows = summarize(
      [
        { system: 'base', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [100, 120, 110] },
        { system: 'fast', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [300, undefined, 330] },
      ],
      'base',
    );
    const report = buildJsonReport(
      {
        bench: 'seed-leveldb',
        baseline: 'base',
        records: 1000,
        runs: 3,
        systems: ['base', 'fast', 'gone'],
        unavailable: new Map([['gone', 'not built']]),
      },
      rows,
      new Date('2026-01-01T00:00:00Z'),
    );
    const parsed = JSON.parse(JSON.stringify(report));
    expect(parsed.bench).toBe('seed-leveldb');
    expect(parsed.unavailable).toEqual({ gone: 'not built' });
    expect(parsed.date).toBe('2026-01-01T00:00:00.000Z');
    expect(parsed.rows[0]).toMatchObject({ system: 'base', case: 'put', metric: 'ops/s', value: 110, unit: 'ops/s' });
    expect(parsed.rows[1]).toEqual({
      system: 'fast',
      case: 'put',
      metric: 'ops/s',
      value: 315,
      unit: 'ops/s',
      better: 'higher',
      min: 300,
      max: 330,
      runs: [300, null, 330],
      ratio: 3,
      ratioMin: 3,
      ratioMax: 3,
    });
  });
});
