import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OffHeapError, OffHeapErrorCodes } from './errors.js';

describe('error codes', () => {
  it('are unique, prefixed, and every one is documented in the README', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const codes = Object.values(OffHeapErrorCodes);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) {
      expect(code).toMatch(/^HEAPLESS_ERR_OFFHEAP_[A-Z_]+$/);
      expect(readme).toContain(`\`${code}\``);
    }
  });

  it('carry their code on a typed error', () => {
    const e = new OffHeapError(OffHeapErrorCodes.CLOSED, 'x');
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('HEAPLESS_ERR_OFFHEAP_CLOSED');
    expect(e.name).toBe('OffHeapError');
  });
});
