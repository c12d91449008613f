import { describe, expect, it } from 'vitest';
import { summarize } from './statistics.js';
import { renderSvgChart } from './svg-chart.js';

describe('renderSvgChart', () => {
  it('draws one bar per available system per case, scaled to the largest, with escaped labels', () => {
    const rows = summarize(
      [
        { system: 'a<b', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [100] },
        { system: 'c', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [50] },
      ],
      'a<b',
    );
    const svg = renderSvgChart(
      {
        bench: 'b',
        baseline: 'a<b',
        records: 1,
        runs: 1,
        systems: ['a<b', 'c', 'gone'],
        unavailable: new Map([['gone', 'x']]),
      },
      rows,
    );
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('a&lt;b');
    expect(svg).not.toContain('gone');
    const widths = [...svg.matchAll(/<rect x="\d+" y="\d+" width="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(widths).toEqual([250, 125]);
    expect(svg).toContain('×0.500');
  });
});
