import { describe, expect, it } from 'vitest';
import { murmur3 } from './murmur3.js';

/** The uint32 hash of `input` (a string's UTF-8, or bytes) with `seed`. */
function hash(input: string | number[], seed: number): number {
  const b = typeof input === 'string' ? new TextEncoder().encode(input) : Uint8Array.from(input);
  return murmur3(b, 0, b.length, seed) >>> 0;
}

describe('murmur3', () => {
  it("gives MurmurHash3 x86_32's published values, zero tails included", () => {
    expect(hash('', 0)).toBe(0);
    expect(hash('', 1)).toBe(0x514e28b7);
    expect(hash('', 0xffffffff)).toBe(0x81f16f39);
    expect(hash([0], 0)).toBe(0x514e28b7);
    expect(hash([0, 0], 0)).toBe(0x30f4c306);
    expect(hash([0, 0, 0], 0)).toBe(0x85f0b427);
    expect(hash([0, 0, 0, 0], 0)).toBe(0x2362f9de);
    expect(hash('a', 0x9747b28c)).toBe(0x7fa09ea6);
    expect(hash('abc', 0x9747b28c)).toBe(0xc84a62dd);
    expect(hash('aaaa', 0x9747b28c)).toBe(0x5a97808a);
    expect(hash('Hello, world!', 0x9747b28c)).toBe(0x24884cba);
    expect(hash('The quick brown fox jumps over the lazy dog', 0x9747b28c)).toBe(0x2fa826cd);
  });

  it('hashes the bytes at an offset as the same bytes alone', () => {
    const b = new TextEncoder().encode('xxabcdefgyy');
    expect(murmur3(b, 2, 7, 42)).toBe(murmur3(b.slice(2, 9), 0, 7, 42));
  });
});
