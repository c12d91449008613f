import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  isOffHeapErrorCode,
  OFFHEAP_ERRORS,
  OffHeapError,
  type OffHeapErrorCode,
  OffHeapErrorCodes,
} from './errors.js';

const codes = Object.keys(OFFHEAP_ERRORS) as OffHeapErrorCode[];

describe('OFFHEAP_ERRORS', () => {
  it('lists prefixed codes, each with a message, and OffHeapErrorCodes names each by its short name', () => {
    for (const c of codes) {
      expect(c).toMatch(/^HEAPLESS_ERR_OFFHEAP_[A-Z_]+$/);
      expect(OFFHEAP_ERRORS[c].message.length).toBeGreaterThan(0);
    }
    expect(Object.values(OffHeapErrorCodes).sort()).toEqual([...codes].sort());
    for (const [short, code] of Object.entries(OffHeapErrorCodes)) expect(code).toBe(`HEAPLESS_ERR_OFFHEAP_${short}`);
  });

  it('keeps the public code strings', () => {
    // These strings are public (programs compare them, the actor maps them): a change here breaks callers.
    expect(codes).toEqual([
      'HEAPLESS_ERR_OFFHEAP_INVALID_ARGUMENT',
      'HEAPLESS_ERR_OFFHEAP_KEY_TOO_LARGE',
      'HEAPLESS_ERR_OFFHEAP_VALUE_TOO_LARGE',
      'HEAPLESS_ERR_OFFHEAP_FIELD_OVERFLOW',
      'HEAPLESS_ERR_OFFHEAP_ENCODE_FAILED',
      'HEAPLESS_ERR_OFFHEAP_DECODE_FAILED',
      'HEAPLESS_ERR_OFFHEAP_CLOSED',
      'HEAPLESS_ERR_OFFHEAP_READ_ONLY',
      'HEAPLESS_ERR_OFFHEAP_VIEW_NOT_POSITIONED',
      'HEAPLESS_ERR_OFFHEAP_PERSIST_FAILED',
      'HEAPLESS_ERR_OFFHEAP_INCOMPATIBLE',
      'HEAPLESS_ERR_OFFHEAP_WORKER_FAILED',
      'HEAPLESS_ERR_OFFHEAP_VERSION_MISMATCH',
      'HEAPLESS_ERR_OFFHEAP_NOT_AN_INTEGER',
      'HEAPLESS_ERR_OFFHEAP_COUNTER_OVERFLOW',
    ]);
  });

  it('is the list of codes of the README error table, no more and no fewer', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(
      readme.indexOf('\n## Errors'),
      readme.indexOf('\n## ', readme.indexOf('\n## Errors') + 1),
    );
    const documented = [...section.matchAll(/^\|\s*`([A-Z_]+)`\s*\|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...codes].sort());
  });

  it('tells its codes from other strings', () => {
    expect(isOffHeapErrorCode('HEAPLESS_ERR_OFFHEAP_CLOSED')).toBe(true);
    expect(isOffHeapErrorCode('HEAPLESS_ERR_ENGINE_CLOSED')).toBe(false); // the engine's
    expect(isOffHeapErrorCode('toString')).toBe(false);
    expect(isOffHeapErrorCode(7)).toBe(false);
  });
});

describe('OffHeapError', () => {
  it('carries its code, and the table message when given none', () => {
    const e = new OffHeapError(OffHeapErrorCodes.CLOSED);
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('HEAPLESS_ERR_OFFHEAP_CLOSED');
    expect(e.name).toBe('OffHeapError');
    expect(e.message).toBe('closed');
    const cause = new Error('disk');
    const f = new OffHeapError('HEAPLESS_ERR_OFFHEAP_PERSIST_FAILED', 'write of key k failed', { cause });
    expect(f.message).toBe('write of key k failed');
    expect(f.cause).toBe(cause);
  });
});
