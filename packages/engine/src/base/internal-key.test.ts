import { describe, expect, it } from 'vitest';
import { compareInternalKeys, kindOf, makeInternalKey, sequenceOf, userKeyOf, ValueKind } from './internal-key.js';

const enc = new TextEncoder();

describe('internal keys', () => {
  it('round-trips sequence and kind up to the largest sequence', () => {
    for (const seq of [0, 1, 255, 256, 2 ** 32 - 1, 2 ** 32, 2 ** 45 - 1]) {
      const k = makeInternalKey(enc.encode('abc'), seq, ValueKind.Deletion);
      expect(sequenceOf(k)).toBe(seq);
      expect(kindOf(k)).toBe(ValueKind.Deletion);
      expect(Buffer.from(userKeyOf(k)).toString()).toBe('abc');
    }
  });

  it('orders user key ascending, then newest sequence first', () => {
    const keys = [
      makeInternalKey(enc.encode('b'), 1, ValueKind.Value),
      makeInternalKey(enc.encode('a'), 1, ValueKind.Value),
      makeInternalKey(enc.encode('ab'), 9, ValueKind.Value),
      makeInternalKey(enc.encode('a'), 7, ValueKind.Deletion),
      makeInternalKey(enc.encode(''), 3, ValueKind.Value),
    ];
    keys.sort(compareInternalKeys);
    expect(keys.map((k) => `${Buffer.from(userKeyOf(k)).toString()}@${sequenceOf(k)}`)).toEqual([
      '@3',
      'a@7',
      'a@1',
      'ab@9',
      'b@1',
    ]);
  });
});
