import { ERROR_CODES, HeaplessError } from '@heapless/client/protocol';
import { CorruptionError, ENGINE_ERRORS, EngineError, ErrorCodes } from '@heapless/engine';
import { OFFHEAP_ERRORS, OffHeapError, OffHeapErrorCodes } from '@heapless/offheap';
import { REPLICA_ERRORS, ReplicaError, ReplicaErrorCodes } from '@heapless/replica';
import { describe, expect, it } from 'vitest';
import { ACTOR_ERRORS, ActorError } from '../errors.js';
import { WIRE_CODES, wireCodeOf } from './wire-error.js';

/** Every package table whose errors can reach a client, as each package exports it at run time. */
const TABLES = { engine: ENGINE_ERRORS, offheap: OFFHEAP_ERRORS, replica: REPLICA_ERRORS, actor: ACTOR_ERRORS };

describe('wire codes of the packages’ errors', () => {
  it('maps every code of every package’s table to a wire code, and nothing else', () => {
    const all = Object.values(TABLES).flatMap((table) => Object.keys(table));
    const unmapped = all.filter((code) => !Object.hasOwn(WIRE_CODES, code));
    expect(unmapped).toEqual([]);
    expect(Object.keys(WIRE_CODES).sort()).toEqual([...all].sort());
    for (const [pkg, table] of Object.entries(TABLES)) {
      for (const code of Object.keys(table)) {
        const wire = wireCodeOf(Object.assign(new Error('x'), { code }));
        expect(wire, `${pkg} ${code}`).not.toBe('ACTOR_ERROR');
        expect(Object.hasOwn(ERROR_CODES, wire), `${pkg} ${code}`).toBe(true);
      }
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

  it('gives a write through the change log the code of what failed, through the table', () => {
    const cases = [
      [ReplicaErrorCodes.KEY_TOO_LARGE, 'KEY_TOO_LARGE', 413],
      [ReplicaErrorCodes.VALUE_TOO_LARGE, 'VALUE_TOO_LARGE', 413],
      [ReplicaErrorCodes.TOO_MANY_CHANGES, 'BATCH_TOO_LARGE', 413],
      [ReplicaErrorCodes.MESSAGE_TOO_LARGE, 'BATCH_TOO_LARGE', 413],
      [ReplicaErrorCodes.UNAVAILABLE, 'UNAVAILABLE', 503],
      [ReplicaErrorCodes.CLOSED, 'UNAVAILABLE', 503],
    ] as const;
    for (const [replica, code, status] of cases) {
      expect(wireCodeOf(new ReplicaError(replica, 'x'))).toBe(code);
      expect(ERROR_CODES[code].status).toBe(status);
    }
    expect(wireCodeOf(new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION'))).toBe('INTERNAL');
  });

  it('keeps a HeaplessError’s code, and calls anything else ACTOR_ERROR', () => {
    expect(wireCodeOf(new HeaplessError('MAILBOX_FULL'))).toBe('MAILBOX_FULL');
    expect(wireCodeOf(new Error('a bug'))).toBe('ACTOR_ERROR');
    expect(wireCodeOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('ACTOR_ERROR');
    expect(wireCodeOf(null)).toBe('ACTOR_ERROR');
  });

  it('never takes a wire code from how an error’s code is spelled', () => {
    // A code that is a wire name on an error that is not a HeaplessError is some other library's code.
    for (const code of ['UNAVAILABLE', 'KEY_TOO_LARGE', 'MAILBOX_FULL', 'STORAGE_CORRUPTION'])
      expect(wireCodeOf(Object.assign(new Error('x'), { code })), code).toBe('ACTOR_ERROR');
  });

  it('calls a package-style code that no table knows INTERNAL, a fault of the server', () => {
    expect(wireCodeOf(Object.assign(new Error('x'), { code: 'HEAPLESS_ERR_ENGINE_NOPE' }))).toBe('INTERNAL');
    expect(wireCodeOf(Object.assign(new Error('x'), { code: 'HEAPLESS_ERR_CORRUPTION' }))).toBe('INTERNAL');
  });
});
