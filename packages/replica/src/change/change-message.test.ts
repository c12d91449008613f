import { headers as natsHeaders } from '@nats-io/nats-core';
import { describe, expect, it } from 'vitest';
import { ReplicaError, type ReplicaErrorCode } from '../errors.js';
import { deleteChange, setChange } from '../index.js';
import { encodeChanges } from './change-codec.js';
import { changeHeaders, readChangeMessage } from './change-message.js';

const payload = encodeChanges([setChange('k', Uint8Array.of(1)), deleteChange('d')]);

function hdrs(entries: [string, string][]) {
  const h = natsHeaders();
  for (const [k, v] of entries) h.append(k, v);
  return h;
}

function code(f: () => unknown): ReplicaErrorCode {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    return (err as ReplicaError).code;
  }
  throw new Error('expected a ReplicaError');
}

describe('change message headers', () => {
  it('reads back what changeHeaders writes', () => {
    const message = readChangeMessage(7, changeHeaders('users-v2', 'w-1'), payload, { schema: 'users-v2' });
    expect(message).toMatchObject({ seq: 7, msgId: 'w-1', schema: 'users-v2' });
    expect(message.changes.map((c) => c.type)).toEqual(['set', 'delete']);
  });

  it('matches header names without regard to case and needs no message id', () => {
    const h = hdrs([
      ['heapless-format', '1'],
      ['HEAPLESS-SCHEMA', 's1'],
    ]);
    expect(readChangeMessage(1, h, payload)).toMatchObject({ msgId: undefined, schema: 's1' });
  });

  it('refuses missing, repeated and ill-formed headers, other formats and other schemas', () => {
    const ok: [string, string][] = [
      ['Heapless-Format', '1'],
      ['Heapless-Schema', 's1'],
    ];
    expect(code(() => readChangeMessage(1, undefined, payload))).toBe('HEAPLESS_ERR_REPLICA_BAD_HEADER');
    expect(code(() => readChangeMessage(1, hdrs([ok[1]!]), payload))).toBe('HEAPLESS_ERR_REPLICA_BAD_HEADER');
    expect(code(() => readChangeMessage(1, hdrs([ok[0]!]), payload))).toBe('HEAPLESS_ERR_REPLICA_BAD_HEADER');
    expect(code(() => readChangeMessage(1, hdrs([...ok, ['Heapless-Format', '1']]), payload))).toBe(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
    );
    expect(code(() => readChangeMessage(1, hdrs([['Heapless-Format', 'one'], ok[1]!]), payload))).toBe(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
    );
    // Only the documented spelling of version 1 (spaces around a value are header syntax, dropped by nats.js).
    for (const spelling of ['01', '001', '+1', '1.0', '0x1', '1 1'])
      expect(code(() => readChangeMessage(1, hdrs([['Heapless-Format', spelling], ok[1]!]), payload))).toBe(
        'HEAPLESS_ERR_REPLICA_BAD_HEADER',
      );
    expect(code(() => readChangeMessage(1, hdrs([ok[0]!, ['Heapless-Schema', 'a b']]), payload))).toBe(
      'HEAPLESS_ERR_REPLICA_BAD_HEADER',
    );
    expect(code(() => readChangeMessage(1, hdrs([['Heapless-Format', '2'], ok[1]!]), payload))).toBe(
      'HEAPLESS_ERR_REPLICA_UNSUPPORTED_FORMAT',
    );
    expect(code(() => readChangeMessage(1, hdrs(ok), payload, { schema: 's2' }))).toBe(
      'HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH',
    );
  });

  it('names the sequence in payload errors', () => {
    const err = (() => {
      try {
        readChangeMessage(42, changeHeaders('s', 'id'), Uint8Array.of(0xc0));
      } catch (e) {
        return e as ReplicaError;
      }
    })();
    expect(err?.code).toBe('HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE');
    expect(err?.message).toMatch(/^message 42: /);
  });
});
