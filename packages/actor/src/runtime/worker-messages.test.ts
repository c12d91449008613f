import { HeaplessError } from '@heapless/client/protocol';
import { EngineError, ErrorCodes } from '@heapless/engine';
import { describe, expect, it } from 'vitest';
import { deserializeError, serializeError } from './worker-messages.js';

/** `e` as the parent sees it after crossing the thread (structured clone of the serialized form). */
const crossed = (e: unknown) => deserializeError(structuredClone(serializeError(e)));

describe('errors across the worker boundary', () => {
  it('a HeaplessError stays one, with its code and message', () => {
    const e = crossed(new HeaplessError('MAILBOX_FULL', 'full'));
    expect(e).toBeInstanceOf(HeaplessError);
    expect(e).toMatchObject({ code: 'MAILBOX_FULL', message: 'full' });
  });

  it('a package error keeps its code and name as a plain error', () => {
    const e = crossed(new EngineError(ErrorCodes.IO, 'disk full'));
    expect(e).not.toBeInstanceOf(HeaplessError);
    expect(e).toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_IO', name: 'EngineError', message: 'disk full' });
  });

  it('a plain error whose code is spelled like a wire code does not become a HeaplessError', () => {
    const e = crossed(Object.assign(new Error('bad'), { code: 'BAD_ARGUMENTS' }));
    expect(e).not.toBeInstanceOf(HeaplessError);
    expect(e).toMatchObject({ code: 'BAD_ARGUMENTS', message: 'bad' });
  });
});
