import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { textDecoderReader, utf8Length, writeUtf8 } from './utf8.js';

/** Strings of any UTF-16 code units, lone surrogates often. */
const codeUnitString = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x61, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfffd)), {
    maxLength: 24,
  })
  .map((units) => String.fromCharCode(...units));

describe('UTF-8', () => {
  it('encodes exactly as TextEncoder does, lone surrogates as U+FFFD (property)', () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(codeUnitString, (s) => {
        const want = enc.encode(s);
        const dst = new Uint8Array(want.length + 4).fill(0xee);
        expect(utf8Length(s)).toBe(want.length);
        expect(writeUtf8(s, dst, 2)).toBe(want.length);
        expect([...dst.subarray(2, 2 + want.length)]).toEqual([...want]);
        expect([dst[0], dst[1], dst[want.length + 2], dst[want.length + 3]]).toEqual([0xee, 0xee, 0xee, 0xee]);
      }),
      { numRuns: 1000 },
    );
  });

  it('reads any bytes as TextDecoder does, the short ASCII path included (property)', () => {
    const td = new TextDecoder();
    const read = textDecoderReader(new TextDecoder());
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.array(fc.integer({ min: 0, max: 0x7f }), { maxLength: 20 }).map((a) => Uint8Array.from(a)),
    );
    fc.assert(
      fc.property(bytes, fc.nat(3), (b, pad) => {
        const buf = new Uint8Array(b.length + pad * 2);
        buf.set(b, pad);
        expect(read(buf, pad, pad + b.length)).toBe(td.decode(b));
      }),
      { numRuns: 1000 },
    );
  });
});
