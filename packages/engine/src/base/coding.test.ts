import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  getVarint32,
  getVarint64,
  MAX_VARINT64_LENGTH,
  putVarint32,
  putVarint64,
  readU32LE,
  readU64LE,
  varint32Length,
  writeU32LE,
  writeU64LE,
} from './coding.js';

describe('varint32', () => {
  it('round-trips every length class and says how long it is', () => {
    for (const v of [0, 1, 127, 128, 16383, 16384, 0x1f_ffff, 0x20_0000, 0xfff_ffff, 0x1000_0000, 2 ** 32 - 1]) {
      const out = new Uint8Array(5);
      const end = putVarint32(out, 0, v);
      expect(end).toBe(varint32Length(v));
      const pos = [0];
      expect(getVarint32(out, pos, end)).toBe(v);
      expect(pos[0]).toBe(end);
    }
  });
});

describe('varint64', () => {
  it('round-trips safe integers in at most 8 bytes, with the bytes LevelDB writes', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (v) => {
        const out = new Uint8Array(MAX_VARINT64_LENGTH + 2);
        const end = putVarint64(out, 1, v);
        expect(end - 1).toBeLessThanOrEqual(MAX_VARINT64_LENGTH);
        const pos = new Int32Array([1]);
        expect(getVarint64(out, pos, end)).toBe(v);
        expect(pos[0]).toBe(end);
      }),
    );
    const out = new Uint8Array(8);
    expect([...out.subarray(0, putVarint64(out, 0, 300))]).toEqual([0xac, 0x02]);
    expect(putVarint64(out, 0, Number.MAX_SAFE_INTEGER)).toBe(8);
  });

  it('returns -1 and leaves the cursor for a varint cut short, too long, or above 2^53 - 1', () => {
    const cases = [
      [0x80], // cut short by the limit
      [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // nine bytes
      [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // 2^56 - 1
      [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10], // 2^53
    ];
    for (const bytes of cases) {
      const pos = [0];
      expect(getVarint64(new Uint8Array(bytes), pos, bytes.length)).toBe(-1);
      expect(pos[0]).toBe(0);
    }
    // The limit, not the buffer's end, bounds the read.
    expect(getVarint64(new Uint8Array([0x81, 0x01]), [0], 1)).toBe(-1);
  });
});

describe('fixed-width integers', () => {
  it('round-trip little-endian uint32 and uint64 (below 2^53) at any offset', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 32 - 1 }), fc.maxSafeNat(), fc.nat({ max: 7 }), (u32, u64, at) => {
        const buf = new Uint8Array(20);
        writeU32LE(buf, at, u32);
        expect(readU32LE(buf, at)).toBe(u32);
        expect(Buffer.from(buf.buffer).readUInt32LE(at)).toBe(u32);
        writeU64LE(buf, at + 4, u64);
        expect(readU64LE(buf, at + 4)).toBe(u64);
        expect(Buffer.from(buf.buffer).readBigUInt64LE(at + 4)).toBe(BigInt(u64));
      }),
    );
  });
});
