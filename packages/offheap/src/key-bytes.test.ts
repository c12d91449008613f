import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from './errors.js';
import {
  bytesEqual,
  hashBytes,
  isUtf8Key,
  KeyHasher,
  utf8Equals,
  utf8EqualsAligned,
  utf8Length,
  wordsEqual,
  writeUtf8,
} from './key-bytes.js';

/** Strings of any UTF-16 code units, lone surrogates often. */
const codeUnitString = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x61, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfffd)), {
    maxLength: 12,
  })
  .map((units) => String.fromCharCode(...units));

describe('key bytes', () => {
  it('encodes exactly like TextEncoder, lone surrogates included; hashes only well-formed keys', () => {
    const enc = new TextEncoder();
    const h = new KeyHasher();
    fc.assert(
      fc.property(codeUnitString, (s) => {
        const want = enc.encode(s);
        const dst = new Uint8Array(want.length + 4);
        expect(writeUtf8(s, dst, 2)).toBe(want.length);
        expect(Array.from(dst.subarray(2, 2 + want.length))).toEqual(Array.from(want));
        expect(utf8Length(s)).toBe(want.length);
        expect(utf8Equals(s, dst, 2, want.length)).toBe(true);
        if (!s.isWellFormed()) {
          expect(() => h.hashString(s)).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }));
          return;
        }
        expect(h.hashString(s)).toBe(hashBytes(want, 0, want.length));
        expect(h.byteLength).toBe(want.length);
      }),
    );
  });

  it('refuses a lone surrogate wherever it is in the key', () => {
    const h = new KeyHasher();
    for (const s of [
      '\ud800',
      '\udc00',
      'a\ud800',
      '\ud800a',
      'abcd\udfff',
      '😀\ud83d',
      '\ude00😀',
      `${'x'.repeat(70)}\ud800`,
    ]) {
      expect(() => h.hashString(s)).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }));
    }
    expect(h.hashString('\ud83d\ude00')).toBe(h.hashString('😀'));
  });

  it('tells valid UTF-8 key bytes from bytes that no string encodes to', () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        const b = enc.encode(`..${s}`);
        expect(isUtf8Key(b, 2, b.length - 2)).toBe(true);
      }),
    );
    for (const bad of [[0xff], [0x80], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]]) {
      const b = Uint8Array.of(0x61, ...bad, 0x62);
      expect(isUtf8Key(b, 0, b.length)).toBe(false);
      expect(isUtf8Key(b, 0, 1)).toBe(true); // the range alone counts
    }
  });

  it('utf8Equals and its word-at-a-time form reject any other key of the same length', () => {
    const enc = new TextEncoder();
    const check = (a: string, b: string) => {
      const bb = enc.encode(b);
      if (bb.length !== utf8Length(a)) return;
      const aligned = new Uint8Array(8 + ((bb.length + 3) & ~3));
      aligned.set(bb, 8);
      const words = new Uint32Array(aligned.buffer);
      expect(utf8Equals(a, bb, 0, bb.length)).toBe(a === b);
      expect(utf8EqualsAligned(a, aligned, words, 8, bb.length)).toBe(a === b);
    };
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), check));
    // same length, differing in one place: in a word, in the tail, after a non-ASCII unit
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }), fc.nat(), (a, at) => {
        const i = at % a.length;
        const b = a.slice(0, i) + (a[i] === 'x' ? 'y' : 'x') + a.slice(i + 1);
        check(a, b);
        check(a, a);
        check(`é${a}`, `é${b}`);
      }),
    );
    expect(utf8Equals('ab', enc.encode('ac'), 0, 2)).toBe(false);
    expect(utf8Equals('é', enc.encode('è'), 0, 2)).toBe(false);
  });

  it('is MurmurHash3 x86_32 (published vectors, seed 0x9747b28c), from strings and from bytes', () => {
    const h = new KeyHasher();
    const enc = new TextEncoder();
    for (const [s, want] of [
      ['Hello, world!', 0x24884cba],
      ['The quick brown fox jumps over the lazy dog', 0x2fa826cd],
    ] as const) {
      expect(h.hashString(s) >>> 0).toBe(want);
      expect(hashBytes(enc.encode(s), 0, enc.encode(s).length) >>> 0).toBe(want);
    }
  });

  it('hashes keys that differ in one byte apart', () => {
    const h = new KeyHasher();
    const seen = new Set<number>();
    for (let i = 0; i < 10_000; i++) seen.add(h.hashString(`user:${i}`) & 0xffff);
    // 10k keys in 65536 buckets: a good hash leaves few collisions (expected ~ 7%), a bad one many.
    expect(seen.size).toBeGreaterThan(9_000);
  });

  it('keeps short ASCII keys as words that match their stored bytes (and only theirs), whatever follows them', () => {
    const enc = new TextEncoder();
    const h = new KeyHasher();
    const stored = (b: string, fill: number) => {
      const bb = enc.encode(b);
      const block = new Uint8Array(8 + ((bb.length + 8) & ~7)).fill(fill);
      block.set(bb, 8);
      return { i32: new Int32Array(block.buffer), len: bb.length };
    };
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-ascii', maxLength: 70 }), fc.nat(), fc.nat(255), (a, at, fill) => {
        h.hashString(a);
        expect(h.wordsValid).toBe(a.length <= 64);
        if (!h.wordsValid) return;
        const same = stored(a, fill);
        expect(wordsEqual(h.words, same.i32, 2, same.len)).toBe(true);
        if (a.length === 0) return;
        const i = at % a.length;
        const b = a.slice(0, i) + (a[i] === 'x' ? 'y' : 'x') + a.slice(i + 1);
        const other = stored(b, fill);
        expect(wordsEqual(h.words, other.i32, 2, other.len)).toBe(false);
      }),
    );
    h.hashString('né');
    expect(h.wordsValid).toBe(false);
    h.hashString('a'.repeat(65));
    expect(h.wordsValid).toBe(false);
  });

  it('compares byte ranges', () => {
    const a = Uint8Array.of(1, 2, 3, 4);
    expect(bytesEqual(a, 1, Uint8Array.of(2, 3), 0, 2)).toBe(true);
    expect(bytesEqual(a, 0, Uint8Array.of(2, 3), 0, 2)).toBe(false);
  });
});
