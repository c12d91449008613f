import { MsgpackDecoder } from '@heapless/client/protocol';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { changeJson, withValueJson } from './change-json.js';

const decoder = new MsgpackDecoder();
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

describe('the JSON forms of stored values', () => {
  // [what, stored bytes, the JSON form of the value, or undefined when it goes as bytes]
  const cases: [string, Uint8Array, unknown][] = [
    ['a map', pack({ n: 1, s: 'ü', a: [true, null] }), { n: 1, s: 'ü', a: [true, null] }],
    ['a string', pack('x'), 'x'],
    ['a map with a key __proto__', pack(JSON.parse('{"__proto__":1}')), JSON.parse('{"__proto__":1}')],
    ['not msgpack', Uint8Array.of(0xc1), undefined],
    ['msgpack and trailing bytes (a struct record)', Uint8Array.of(1, 2, 3), undefined],
    ['msgpack holding bytes', pack({ img: Uint8Array.of(1) }), undefined],
    ['a bigint', pack(2n ** 62n), undefined],
    ['a date', pack(new Date(0)), undefined],
    ['undefined', pack(undefined), undefined],
    ['undefined in an array', pack([undefined]), undefined],
  ];
  for (const [what, bytes, value] of cases) {
    it(`${what}: ${value === undefined ? 'base64 bytes' : 'its JSON'}`, () => {
      const expected = value === undefined ? { key: 'k', bytes: b64(bytes) } : { key: 'k', value };
      expect(JSON.parse(withValueJson(decoder, { key: 'k' }, bytes))).toEqual(expected);
      expect(JSON.parse(changeJson(decoder, [7, 'k', bytes]))).toEqual({ sequence: 7, ...expected });
    });
  }

  it('a delete', () => {
    expect(JSON.parse(changeJson(decoder, [8, 'k', null]))).toEqual({ sequence: 8, key: 'k', deleted: true });
  });

  it('an empty head', () => {
    expect(withValueJson(decoder, {}, pack(1))).toBe('{"value":1}');
  });
});
