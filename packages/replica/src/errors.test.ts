import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeChanges } from './change/change-codec.js';
import {
  isReplicaErrorCode,
  REPLICA_ERRORS,
  ReplicaError,
  type ReplicaErrorCode,
  ReplicaErrorCodes,
} from './errors.js';

describe('REPLICA_ERRORS', () => {
  const codes = Object.keys(REPLICA_ERRORS) as ReplicaErrorCode[];

  it('the README error table lists exactly the codes of the table', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Errors'));
    const documented = [...section.matchAll(/^\|\s*`([A-Z_]+)`\s*\|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...codes].sort());
  });

  it('names each code HEAPLESS_ERR_REPLICA_<NAME>, and ReplicaErrorCodes by its short name', () => {
    for (const code of codes) expect(code).toMatch(/^HEAPLESS_ERR_REPLICA_[A-Z_]+$/);
    expect(Object.values(ReplicaErrorCodes).sort()).toEqual([...codes].sort());
    for (const [short, code] of Object.entries(ReplicaErrorCodes)) expect(code).toBe(`HEAPLESS_ERR_REPLICA_${short}`);
    expect(Object.isFrozen(ReplicaErrorCodes)).toBe(true);
    for (const code of codes) expect(isReplicaErrorCode(code)).toBe(true);
    // The wire's code of the same name is not the replica's.
    for (const other of ['UNAVAILABLE', 'KEY_TOO_LARGE', 'toString', undefined])
      expect(isReplicaErrorCode(other)).toBe(false);
  });

  it('builds errors from the table, with the code and its default message', () => {
    const err = new ReplicaError('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect(err.code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect(err.message).toBe(REPLICA_ERRORS.HEAPLESS_ERR_REPLICA_UNAVAILABLE.message);
    expect(err.name).toBe('ReplicaError');
    const cause = new Error('inner');
    expect(new ReplicaError('HEAPLESS_ERR_REPLICA_NATS_ERROR', 'outer', { cause }).cause).toBe(cause);
  });

  it('the example of FORMAT.md decodes as it says', () => {
    const doc = readFileSync(new URL('../FORMAT.md', import.meta.url), 'utf8');
    const example = doc.slice(doc.indexOf('Example (hex)'));
    const block = example.slice(example.indexOf('```') + 3, example.indexOf('```', example.indexOf('```') + 3));
    const hex = block
      .split('\n')
      .map((line) => line.trim().replace(/ {2,}.*$/, ''))
      .join(' ')
      .replace(/\s+/g, '');
    const [set, del] = decodeChanges(Buffer.from(hex, 'hex'));
    expect(set).toMatchObject({ type: 'set', key: 'a' });
    expect(Buffer.from(set!.value!).toString('hex')).toBe('81a16e01');
    expect(del).toMatchObject({ type: 'delete', key: 'b' });
  });
});
