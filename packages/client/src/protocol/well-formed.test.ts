import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isWellFormed, isWellFormedByScan } from './well-formed.js';

describe('isWellFormed', () => {
  it('agrees with TextEncoder, natively and by scan: well-formed exactly when a UTF-8 round trip keeps it', () => {
    const enc = new TextEncoder();
    const dec = new TextDecoder('utf-8', { ignoreBOM: true }); // a leading U+FEFF is kept, as isWellFormed keeps it
    const units = fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0xd800, 0xdbff, 0xdc00, 0xdfff));
    fc.assert(
      fc.property(fc.array(units, { maxLength: 8 }), (u) => {
        const s = String.fromCharCode(...u);
        const want = dec.decode(enc.encode(s)) === s;
        expect(isWellFormed(s)).toBe(want);
        expect(isWellFormedByScan(s)).toBe(want);
      }),
      { numRuns: 2000 },
    );
  });
});
