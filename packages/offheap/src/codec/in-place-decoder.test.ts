import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InPlaceDecoder, MISS } from './in-place-decoder.js';
import { MsgpackCodec, type Structures } from './msgpack-codec.js';

/** `bytes` placed at an 8-aligned offset of a SharedArrayBuffer, as in an arena segment. */
function inSegment(bytes: Uint8Array, at = 24): { u8: Buffer; dv: DataView; i32: Int32Array; start: number } {
  const sab = new SharedArrayBuffer(at + ((bytes.length + 7) & ~7) + 8);
  const u8 = Buffer.from(sab);
  u8.set(bytes, at);
  return { u8, dv: new DataView(sab), i32: new Int32Array(sab), start: at };
}

/** Keys of every object in `v`, in order, depth first: equal values with another key order differ here. */
function keyOrder(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) keyOrder(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      keyOrder(x, out);
    }
  }
  return out;
}

const field = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.array(fc.integer({ min: -200, max: 70000 }), { maxLength: 20 }),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.date({ noInvalidDate: true }),
  fc.uint8Array({ maxLength: 6 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 3 }),
);
/** Objects of a few shapes (so structures repeat and nest), with every kind of field msgpackr writes. */
const value = fc.oneof(
  fc.record({ id: fc.nat(), name: field, tags: fc.array(field, { maxLength: 4 }) }),
  fc.record({ id: fc.nat(), inner: fc.record({ a: field, b: field }), more: field }),
  fc.record({ ['__proto__']: field, x: field }),
  fc.record({ '0': field, 'a-b': field, 'with space': field }),
  field,
);

describe('InPlaceDecoder', () => {
  it('decodes every value to exactly what msgpackr gives, or leaves it to msgpackr', () => {
    const codec = new MsgpackCodec([], 32, null);
    fc.assert(
      fc.property(value, (v) => {
        const bytes = Uint8Array.from(codec.encode(v));
        const s = inSegment(bytes);
        const want = codec.decodeCopy(Buffer.from(bytes), 0, bytes.length);
        const got = codec.decode(s.u8, s.dv, s.i32, s.start, s.start + bytes.length);
        expect(got).toStrictEqual(want);
        expect(keyOrder(got)).toEqual(keyOrder(want));
        if (got !== null && typeof got === 'object')
          expect(Object.getPrototypeOf(got)).toBe(Object.getPrototypeOf(want));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the common structured objects itself and leaves the rest (and any malformed bytes) to msgpackr', () => {
    const codec = new MsgpackCodec([], 32, null);
    const d = new InPlaceDecoder();
    const structures = (codec as unknown as { packr: { structures: Structures } }).packr.structures;
    const read = (v: unknown, cut = 0) => {
      const bytes = Uint8Array.from(codec.encode(v));
      const s = inSegment(bytes);
      return d.decode(s.u8, s.dv, s.start, s.start + bytes.length - cut, structures);
    };
    const user = { id: 7, name: 'Ada', email: 'ada@example.com', age: 36, friends: [1, 2, 70000], ok: true, x: null };
    expect(read(user)).toStrictEqual(user);
    expect(read({ ...user, score: 1.5, neg: -3, big: -70000 })).toStrictEqual({
      ...user,
      score: 1.5,
      neg: -3,
      big: -70000,
    });
    expect(read({ id: 1, nested: { a: 'x'.repeat(200), b: [] } })).toStrictEqual({
      id: 1,
      nested: { a: 'x'.repeat(200), b: [] },
    });
    expect(read({ ...user, name: 'Adé' })).toBe(MISS); // non-ASCII: msgpackr's UTF-8 decoding is the reference
    expect(read({ ...user, when: new Date(0) })).toBe(MISS);
    expect(read({ ...user, n: 2n ** 40n })).toBe(MISS);
    expect(read({ ...user, m: new Map([[1, 2]]) })).toBe(MISS);
    expect(read('not a record')).toBe(MISS);
    expect(read(42)).toBe(MISS);
    expect(read(user, 1)).toBe(MISS); // truncated
    const s = inSegment(Uint8Array.of(0x40 + 31, 1));
    expect(d.decode(s.u8, s.dv, s.start, s.start + 2, structures)).toBe(MISS); // unknown structure
  });
});
