import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { codeFromWire, ERROR_CODES, type ErrorCode } from './error-codes.js';

describe('ERROR_CODES', () => {
  const codes = Object.keys(ERROR_CODES) as ErrorCode[];
  it('has one number per code', () => {
    const wires = codes.map((c) => ERROR_CODES[c].wire);
    expect(new Set(wires).size).toBe(wires.length);
    for (const c of codes) expect(codeFromWire(ERROR_CODES[c].wire)).toBe(c);
  });
  it('maps an unknown number to INTERNAL', () => expect(codeFromWire(12345)).toBe('INTERNAL'));
  it('is the table of FORMAT.md, row for row: number, code, HTTP status and meaning', () => {
    const doc = readFileSync(new URL('../../FORMAT.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Error codes'));
    const rows = [...section.matchAll(/^\|\s*(\d+)\s*\|\s*`([A-Z_0-9]+)`\s*\|\s*(\d+)\s*\|\s*(.*?)\s*\|$/gm)].map(
      (m) => [Number(m[1]), m[2], Number(m[3]), m[4]],
    );
    expect(rows).toEqual(codes.map((c) => [ERROR_CODES[c].wire, c, ERROR_CODES[c].status, ERROR_CODES[c].message]));
  });
});
