import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CorruptionError,
  closedError,
  ENGINE_ERRORS,
  EngineError,
  type ErrorCode,
  ErrorCodes,
  ioError,
  isErrorCode,
} from './errors.js';

const codes = Object.keys(ENGINE_ERRORS) as ErrorCode[];

describe('ENGINE_ERRORS', () => {
  it('is the table the README documents: its error table lists exactly these codes', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Errors'), readme.indexOf('\n## ', readme.indexOf('## Errors') + 1));
    // Rows whose first cell is a code (biome pads table cells, so allow spaces).
    const documented = [...section.matchAll(/^\|\s*`(HEAPLESS_ERR_[A-Z_]+)`\s*\|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...codes].sort());
  });

  it('keeps the public code strings, and ErrorCodes names each by its short name', () => {
    expect(codes.sort()).toEqual(
      [
        'HEAPLESS_ERR_ENGINE_CORRUPTION',
        'HEAPLESS_ERR_ENGINE_LOCKED',
        'HEAPLESS_ERR_ENGINE_CLOSED',
        'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
        'HEAPLESS_ERR_ENGINE_NOT_FOUND',
        'HEAPLESS_ERR_ENGINE_IO',
        'HEAPLESS_ERR_ENGINE_UNSUPPORTED',
        'HEAPLESS_ERR_ENGINE_READ_ONLY',
        'HEAPLESS_ERR_ENGINE_EXISTS',
      ].sort(),
    );
    expect(ErrorCodes).toEqual({
      CORRUPTION: 'HEAPLESS_ERR_ENGINE_CORRUPTION',
      LOCKED: 'HEAPLESS_ERR_ENGINE_LOCKED',
      CLOSED: 'HEAPLESS_ERR_ENGINE_CLOSED',
      INVALID_ARGUMENT: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
      NOT_FOUND: 'HEAPLESS_ERR_ENGINE_NOT_FOUND',
      IO: 'HEAPLESS_ERR_ENGINE_IO',
      UNSUPPORTED: 'HEAPLESS_ERR_ENGINE_UNSUPPORTED',
      READ_ONLY: 'HEAPLESS_ERR_ENGINE_READ_ONLY',
      EXISTS: 'HEAPLESS_ERR_ENGINE_EXISTS',
    });
    expect(Object.isFrozen(ErrorCodes)).toBe(true);
  });

  it('tells its codes from other strings', () => {
    for (const c of codes) expect(isErrorCode(c)).toBe(true);
    for (const c of ['HEAPLESS_ERR_ENGINE_NOPE', 'toString', 'CORRUPTION', undefined, 3])
      expect(isErrorCode(c)).toBe(false);
  });
});

describe('errors', () => {
  it('builds messages from the table when the thrower gives none, and keeps a given one', () => {
    expect(new EngineError('HEAPLESS_ERR_ENGINE_LOCKED').message).toBe(
      ENGINE_ERRORS.HEAPLESS_ERR_ENGINE_LOCKED.message,
    );
    const e = new EngineError(ErrorCodes.INVALID_ARGUMENT, 'bad key');
    expect([e.code, e.message, e.name, e instanceof Error]).toEqual([
      'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
      'bad key',
      'EngineError',
      true,
    ]);
  });

  it('names the file and offset of corruption, as its own class with the CORRUPTION code', () => {
    const e = new CorruptionError('/d/000007.sst', 4096, 'block checksum mismatch');
    expect(e).toBeInstanceOf(EngineError);
    expect([e.code, e.file, e.offset, e.name]).toEqual([
      'HEAPLESS_ERR_ENGINE_CORRUPTION',
      '/d/000007.sst',
      4096,
      'CorruptionError',
    ]);
    expect(e.message).toBe('corruption in /d/000007.sst at offset 4096: block checksum mismatch');
  });

  it('closedError and ioError say what is closed or failed, and ioError keeps its cause', () => {
    expect(closedError('engine /d').message).toBe('engine /d is closed');
    expect(closedError('table builder for x.sst', 'finished').code).toBe('HEAPLESS_ERR_ENGINE_CLOSED');
    const cause = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    const e = ioError('writing', '/d/000003.log', cause);
    expect([e.code, e.message, e.cause]).toEqual([
      'HEAPLESS_ERR_ENGINE_IO',
      'writing /d/000003.log failed: ENOSPC: no space left on device',
      cause,
    ]);
    expect(ioError('reading', 'x', 'not an Error').message).toBe('reading x failed: not an Error');
  });
});
