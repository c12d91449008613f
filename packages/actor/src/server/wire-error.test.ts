import { ERROR_CODES, HeaplessError } from '@heapless/client/protocol';
import { CorruptionError, EngineError, ErrorCodes } from '@heapless/engine';
import { OffHeapError, OffHeapErrorCodes } from '@heapless/offheap';
import { describe, expect, it } from 'vitest';
import { STORAGE_WIRE_CODES, wireCodeOf } from './wire-error.js';

describe('wire codes of storage errors', () => {
  it('maps every code of the engine and of the map, and nothing else', () => {
    const all = [...Object.values(ErrorCodes), ...Object.values(OffHeapErrorCodes)];
    expect(Object.keys(STORAGE_WIRE_CODES).sort()).toEqual([...all].sort());
    for (const code of Object.values(ErrorCodes)) {
      const wire = wireCodeOf(new EngineError(code, 'x'));
      expect(wire, code).not.toBe('ACTOR_ERROR');
      expect(Object.hasOwn(ERROR_CODES, wire), code).toBe(true);
    }
    for (const code of Object.values(OffHeapErrorCodes)) {
      const wire = wireCodeOf(new OffHeapError(code, 'x'));
      expect(wire, code).not.toBe('ACTOR_ERROR');
      expect(Object.hasOwn(ERROR_CODES, wire), code).toBe(true);
    }
  });

  it('gives each storage failure its own code and the right HTTP status', () => {
    const cases = [
      [new CorruptionError('000005.sst', 4096, 'bad block checksum'), 'STORAGE_CORRUPTION', 500],
      [new EngineError(ErrorCodes.IO, 'ENOSPC'), 'STORAGE_IO', 503],
      [new EngineError(ErrorCodes.CLOSED, 'closed'), 'STORAGE_CLOSED', 503],
      [new EngineError(ErrorCodes.LOCKED, 'locked'), 'STORAGE_LOCKED', 503],
      [new OffHeapError(OffHeapErrorCodes.CLOSED, 'map is closed'), 'STORAGE_CLOSED', 503],
      [new OffHeapError(OffHeapErrorCodes.PERSIST_FAILED, 'engine write failed'), 'STORAGE_PERSIST_FAILED', 503],
      [new OffHeapError(OffHeapErrorCodes.KEY_TOO_LARGE, 'big'), 'KEY_TOO_LARGE', 413],
    ] as const;
    for (const [error, code, status] of cases) {
      expect(wireCodeOf(error)).toBe(code);
      expect(ERROR_CODES[code].status).toBe(status);
    }
    expect(new Set(cases.slice(0, 4).map(([, code]) => ERROR_CODES[code].wire)).size).toBe(4);
  });

  it('keeps a HeaplessError’s code, and calls anything else ACTOR_ERROR', () => {
    expect(wireCodeOf(new HeaplessError('MAILBOX_FULL'))).toBe('MAILBOX_FULL');
    expect(wireCodeOf(new Error('a bug'))).toBe('ACTOR_ERROR');
    expect(wireCodeOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('ACTOR_ERROR');
    expect(wireCodeOf(null)).toBe('ACTOR_ERROR');
  });
});
