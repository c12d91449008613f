import { describe, expect, it } from 'vitest';
import { renderTable } from './report-table.js';
import { summarize } from './statistics.js';

describe('renderTable', () => {
  it('puts systems in columns, follows the baseline order, and lists unavailable systems', () => {
    const rows = summarize(
      [
        { system: 'other', case: 'extra', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [5] },
        { system: 'other', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [2000] },
        { system: 'base', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [1000] },
        { system: 'base', case: 'disk', metric: 'du', unit: 'B', better: 'lower', runs: [2048] },
      ],
      'base',
    );
    const text = renderTable(
      {
        bench: 'b',
        baseline: 'base',
        records: 10,
        runs: 1,
        systems: ['base', 'other', 'gone'],
        unavailable: new Map([['gone', 'why']]),
      },
      rows,
    );
    const lines = text.split('\n');
    expect(lines[1]).toMatch(/^case\s+metric\s+base\s+other$/);
    expect(lines[3]).toMatch(/^put\s+ops\/s\s+1\.00k ×1\.00\s+2\.00k ×2\.00$/);
    expect(lines[4]).toMatch(/^disk\s+du \(B\)\s+2\.00 KiB ×1\.00\s+–$/);
    expect(lines[5]).toMatch(/^extra\s+ops\/s\s+–\s+5\.00$/);
    expect(lines[6]).toBe('gone: not available (why)');
  });

  it('adds a min–max table when there were several runs', () => {
    const rows = summarize(
      [{ system: 'base', case: 'put', metric: 'ops/s', unit: 'ops/s', better: 'higher', runs: [1000, 3000, 2000] }],
      'base',
    );
    const text = renderTable(
      { bench: 'b', baseline: 'base', records: 10, runs: 3, systems: ['base'], unavailable: new Map() },
      rows,
    );
    const lines = text.split('\n');
    expect(lines[3]).toMatch(/^put\s+ops\/s\s+2\.00k ×1\.00$/);
    expect(lines[5]).toBe('range over the 3 runs (min–max)');
    expect(lines[8]).toMatch(/^put\s+ops\/s\s+1\.00k–3\.00k$/);
  });
});
