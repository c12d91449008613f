import { describe, expect, it } from 'vitest';
import { writeU32LE } from '../base/coding.js';
import { crc32c, maskCrc } from '../base/crc32c.js';
import { CorruptionError } from '../base/errors.js';
import {
  BLOCK_TRAILER_SIZE,
  BlockHandle,
  blockChecksumMatches,
  CompressionType,
  decodeBlockHandle,
  decodeFooter,
  encodeBlockHandle,
  encodeFooter,
  FOOTER_SIZE,
  MAX_BLOCK_HANDLE_LENGTH,
  writeBlockTrailer,
} from './table-format.js';
import { PROPERTY_NAMES } from './table-properties.js';

describe('block handles', () => {
  it('round-trip, the largest in MAX_BLOCK_HANDLE_LENGTH bytes', () => {
    for (const [offset, size] of [
      [0, 0],
      [4096, 4091],
      [2 ** 32 - 6, 2 ** 31],
      [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
    ] as const) {
      const out = new Uint8Array(MAX_BLOCK_HANDLE_LENGTH + 3);
      const end = encodeBlockHandle(out, 3, offset, size);
      expect(end - 3).toBeLessThanOrEqual(MAX_BLOCK_HANDLE_LENGTH);
      const h = new BlockHandle();
      const pos = [3];
      expect(decodeBlockHandle(out, pos, end, h)).toBe(true);
      expect([h.offset, h.size, pos[0]]).toEqual([offset, size, end]);
    }
  });

  it('refuses a handle cut short or with an overlong varint', () => {
    const out = new Uint8Array(MAX_BLOCK_HANDLE_LENGTH);
    const end = encodeBlockHandle(out, 0, 1 << 20, 4000);
    for (let cut = 0; cut < end; cut++) expect(decodeBlockHandle(out, [0], cut, new BlockHandle())).toBe(false);
    expect(decodeBlockHandle(new Uint8Array(10).fill(0xff), [0], 10, new BlockHandle())).toBe(false);
  });
});

describe('block trailers', () => {
  it('hold the type and a checksum over the stored bytes and the type, which any flipped bit breaks', () => {
    const stored = new TextEncoder().encode('some stored block bytes');
    const buf = new Uint8Array(stored.length + BLOCK_TRAILER_SIZE);
    buf.set(stored);
    writeBlockTrailer(buf.subarray(stored.length), stored, CompressionType.Deflate);
    expect(buf[stored.length]).toBe(CompressionType.Deflate);
    expect(blockChecksumMatches(buf, 0, stored.length)).toBe(true);
    for (let bit = 0; bit < buf.length * 8; bit++) {
      buf[bit >> 3]! ^= 1 << (bit & 7);
      expect(blockChecksumMatches(buf, 0, stored.length)).toBe(false);
      buf[bit >> 3]! ^= 1 << (bit & 7);
    }
  });
});

describe('footer', () => {
  const footer = { metaindex: new BlockHandle(123_456, 789), index: new BlockHandle(2 ** 32 - 100, 95) };

  it('round-trips in FOOTER_SIZE bytes, in the layout FORMAT.md gives', () => {
    const bytes = encodeFooter(footer);
    expect(bytes.length).toBe(FOOTER_SIZE);
    const b = Buffer.from(bytes);
    expect([
      b.readBigUInt64LE(0),
      b.readUInt32LE(8),
      b.readBigUInt64LE(12),
      b.readUInt32LE(20),
      b.readUInt32LE(24),
    ]).toEqual([123_456n, 789, BigInt(2 ** 32 - 100), 95, 1]);
    expect(b.subarray(32).toString('latin1')).toBe('heapless');
    const padded = new Uint8Array(FOOTER_SIZE + 7);
    padded.set(bytes, 7);
    expect(decodeFooter(padded, 7, 'x.sst', 1000)).toEqual(footer);
  });

  it('names the offset of the field at fault: magic, checksum, version', () => {
    const fail = (mutate: (b: Uint8Array) => void) => {
      const bytes = encodeFooter(footer);
      mutate(bytes);
      try {
        decodeFooter(bytes, 0, 'x.sst', 1000);
      } catch (err) {
        expect(err).toBeInstanceOf(CorruptionError);
        return [(err as CorruptionError).file, (err as CorruptionError).offset, (err as Error).message.split(': ')[1]];
      }
      throw new Error('decoded a damaged footer');
    };
    expect(fail((b) => (b[39] = 0))).toEqual(['x.sst', 1032, 'bad table magic number']);
    expect(fail((b) => (b[0]! ^= 1))).toEqual(['x.sst', 1000, 'footer checksum mismatch']);
    expect(fail((b) => (b[28]! ^= 1))).toEqual(['x.sst', 1000, 'footer checksum mismatch']);
    // A version this reader does not know, under a checksum that matches it.
    expect(
      fail((b) => {
        writeU32LE(b, 24, 2);
        writeU32LE(b, 28, maskCrc(crc32c(b.subarray(0, 28))));
      }),
    ).toEqual(['x.sst', 1024, 'unknown table format version 2']);
  });
});

describe('properties', () => {
  it('are written under names in bytewise order', () => {
    const sorted = [...PROPERTY_NAMES].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(PROPERTY_NAMES).toEqual(sorted);
    expect(new Set(PROPERTY_NAMES).size).toBe(PROPERTY_NAMES.length);
  });
});
