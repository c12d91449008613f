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
  it('documents every code with its number in FORMAT.md', () => {
    const doc = readFileSync(new URL('../FORMAT.md', import.meta.url), 'utf8');
    for (const c of codes)
      expect(doc, c).toMatch(new RegExp(`\\|\\s*${ERROR_CODES[c].wire}\\s*\\|\\s*\`${c}\`\\s*\\|`));
  });
});
