import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { findIllFormed, holdsReplacement, illFormedArguments } from './ill-formed.js';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

describe('ill-formed strings in arguments', () => {
  const packr = new Packr(MSGPACK_OPTIONS);

  it('finds a lone surrogate in strings, arrays, objects and Maps (keys too), never in bytes', () => {
    expect(findIllFormed(['a', 1, { b: ['c', 'ok\ufffd'] }, Uint8Array.of(0xed, 0xa0, 0x80)])).toBeUndefined();
    expect(findIllFormed(['a', [{ b: 'x\ud800' }]])).toBe('x\ud800');
    expect(findIllFormed({ '\udc00': 1 })).toBe('\udc00');
    expect(findIllFormed(new Map([['k', ['\ud83d']]]))).toBe('\ud83d');
  });

  it('refuses exactly the arguments msgpack would have changed', () => {
    for (const args of [['\ud800'], ['k', { s: 'a\udfffb' }], [new Map([['\udbff', 1]])]]) {
      expect(illFormedArguments('m', packr.pack(args), args)).toMatchObject({ code: 'BAD_ARGUMENTS' });
    }
    for (const args of [['\ufffd'], ['😀', Uint8Array.of(0xef, 0xbf, 0xbd)], [1, null]]) {
      expect(illFormedArguments('m', packr.pack(args), args)).toBeUndefined();
    }
    expect(holdsReplacement(Uint8Array.of(1, 0xef, 0xbf))).toBe(false);
    expect(holdsReplacement(Uint8Array.of(0xef, 0xef, 0xbf, 0xbd))).toBe(true);
  });
});
