import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { holdsProtoPortable, MsgpackDecoder } from './msgpack-decoder.js';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

const decoder = new MsgpackDecoder();
const packr = new Packr(MSGPACK_OPTIONS);
/** msgpack maps written from `Map`s: keys exactly as given, whatever JS would do with them in an object literal. */
const map = (...entries: [unknown, unknown][]) => new Map(entries);

describe('MsgpackDecoder', () => {
  it('keeps a map key __proto__ as an own property, beside __proto_, and sets no prototype', () => {
    const bytes = packr.pack(map(['__proto__', 1], ['__proto_', 2], ['a', map(['__proto__', { polluted: true }])]));
    const v = decoder.unpack(bytes) as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['__proto__', '__proto_', 'a']);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toBe(1);
    expect(v.__proto_).toBe(2);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    const inner = v.a as Record<string, unknown>;
    expect(Object.getPrototypeOf(inner)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(inner, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // It is the JSON a JSON body of the same map gives, and it encodes back to what it was decoded from.
    const json = '{"__proto__":1,"__proto_":2,"a":{"__proto__":{"polluted":true}}}';
    expect(JSON.stringify(v)).toBe(json);
    expect(JSON.stringify(decoder.unpack(packr.pack(v)))).toBe(json);
    expect(JSON.stringify(decoder.unpack(packr.pack(JSON.parse(json))))).toBe(json);
  });

  it('decodes maps inside arrays, bin as views, and keys that are not strings as msgpackr names them', () => {
    const bin = Uint8Array.of(1, 2, 3);
    const bytes = packr.pack([map(['__proto__', bin]), map([1, 'one'], [true, 't'], [null, 'n'])]);
    const [a, b] = decoder.unpack(bytes) as [Record<string, unknown>, Record<string, unknown>];
    const got = Object.getOwnPropertyDescriptor(a, '__proto__')?.value as Uint8Array;
    expect([...got]).toEqual([1, 2, 3]);
    expect(got.buffer).toBe(bytes.buffer);
    expect(b).toEqual({ 1: 'one', true: 't', null: 'n' });
    expect(() => decoder.unpack(packr.pack(map([[1], '__proto__'])))).toThrow(/no string form/);
  });

  it('refuses a record (msgpackr extension) whose field may have been renamed', () => {
    const records = new Packr({ ...MSGPACK_OPTIONS, useRecords: true });
    const o = JSON.parse('{"__proto__":1}');
    expect(() => decoder.unpack(records.pack([o]))).toThrow(/__proto_ field/);
  });

  it('decodes what has no __proto__ key as msgpackr does, __proto__ in a value included', () => {
    const plain = new Packr(MSGPACK_OPTIONS);
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.string(),
        fc.constant('__proto__'),
        fc.double({ noNaN: true }),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('v')),
        fc.dictionary(
          fc.string().filter((k) => k !== '__proto__'),
          tie('v'),
        ),
      ),
    })).v;
    fc.assert(
      fc.property(value, (v) => {
        const bytes = plain.pack(v);
        expect(decoder.unpack(bytes)).toEqual(plain.unpack(bytes));
      }),
    );
  });

  it('finds __proto__ without Buffer (browsers) wherever Buffer finds it', () => {
    const bytes = fc.array(fc.constantFrom(0x5f, 0x70, 0x72, 0x6f, 0x74, 0x61), { maxLength: 64 });
    const cases = fc.oneof(
      bytes.map((b) => Uint8Array.from(b)),
      fc.tuple(bytes, bytes).map(([a, b]) => Uint8Array.from([...a, ...Buffer.from('__proto__'), ...b])),
    );
    fc.assert(
      fc.property(cases, (b) => {
        expect(holdsProtoPortable(b)).toBe(Buffer.from(b).includes('__proto__'));
      }),
      { numRuns: 2000 },
    );
  });
});
