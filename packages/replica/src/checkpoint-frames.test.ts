import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, FRAME_HEADER_BYTES, FRAME_PLAIN_BYTES, FrameDecoder, FrameKind } from './checkpoint-frames.js';
import { ReplicaError } from './errors.js';

/** A file's chunks encoded, then cut at `cuts` (offsets into the stored bytes), then decoded. */
function roundTrip(chunks: Uint8Array[], cuts: number[]): Uint8Array {
  const stored = Buffer.concat(chunks.map(encodeFrame));
  const decoder = new FrameDecoder('test');
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (stored.length + 1)))].sort((a, b) => a - b)) {
    out.push(...decoder.push(stored.subarray(at, cut)));
    at = cut;
  }
  out.push(...decoder.push(stored.subarray(at)));
  decoder.end();
  return Buffer.concat(out);
}

function corruptMessage(stored: Uint8Array): string {
  try {
    const decoder = new FrameDecoder('obj');
    decoder.push(stored);
    decoder.end();
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    expect((err as ReplicaError).code).toBe('CHECKPOINT_CORRUPT');
    return (err as ReplicaError).message;
  }
  throw new Error('expected CHECKPOINT_CORRUPT');
}

describe('lz4-frames', () => {
  it('stores a chunk that compresses as lz4, one that does not as raw', () => {
    const text = Buffer.from('listing '.repeat(1000));
    const lz4 = encodeFrame(text);
    expect(lz4[0]).toBe(FrameKind.Lz4);
    expect(lz4.length).toBeLessThan(text.length / 10);
    const noise = randomBytes(4096);
    const raw = encodeFrame(noise);
    expect(raw[0]).toBe(FrameKind.Raw);
    expect(raw.length).toBe(noise.length + FRAME_HEADER_BYTES);
    expect(() => encodeFrame(new Uint8Array(FRAME_PLAIN_BYTES + 1))).toThrow(RangeError);
  });

  it('decodes what it encodes, however the stored bytes are cut into chunks', () => {
    const chunk = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 3000 }),
      fc
        .tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 400 }))
        .map(([s, n]) => Buffer.from(s.repeat(n)).subarray(0, FRAME_PLAIN_BYTES)),
    );
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (chunks, cuts) => {
        expect(roundTrip(chunks, cuts)).toEqual(Buffer.concat(chunks));
      }),
    );
  });

  it('a full 1 MiB frame decodes in one piece and byte by byte alike', () => {
    const big = Buffer.from('0123456789abcdef'.repeat(FRAME_PLAIN_BYTES / 16));
    expect(Buffer.from(roundTrip([big], [])).equals(big)).toBe(true);
    expect(
      roundTrip(
        [big.subarray(0, 5000)],
        Array.from({ length: 200 }, (_, i) => i),
      ),
    ).toEqual(big.subarray(0, 5000));
  });

  it('refuses damaged frames before allocating for them', () => {
    const good = encodeFrame(Buffer.from('abc'.repeat(500)));
    const withByte = (at: number, v: number) => {
      const b = Buffer.from(good);
      b[at] = v;
      return b;
    };
    const withUint32 = (at: number, v: number) => {
      const b = Buffer.from(good);
      b.writeUInt32LE(v, at);
      return b;
    };
    expect(corruptMessage(withByte(0, 7))).toMatch(/obj: unknown frame kind 7, at stored byte 0/);
    expect(corruptMessage(withUint32(1, 0))).toMatch(/a frame of 0 plain bytes/);
    expect(corruptMessage(withUint32(1, 0xffffffff))).toMatch(/a frame of 4294967295 plain bytes/);
    expect(corruptMessage(withUint32(5, 0xffffffff))).toMatch(/a lz4 frame stores 4294967295 bytes for 1500/);
    expect(corruptMessage(withUint32(FRAME_HEADER_BYTES, 1499))).toMatch(
      /an lz4 block of 1499 bytes in a frame of 1500/,
    );
    const raw = Buffer.from(encodeFrame(randomBytes(100)));
    raw.writeUInt32LE(99, 5);
    expect(corruptMessage(raw)).toMatch(/a raw frame stores 99 bytes for 100/);
    // A block whose matches point before its start does not decode.
    const bad = Buffer.from(good);
    bad.fill(0xf0, FRAME_HEADER_BYTES + 4);
    expect(corruptMessage(bad)).toMatch(/an lz4 block (that does not decode|decodes to)/);
    expect(corruptMessage(good.subarray(0, good.length - 1))).toMatch(/ends inside a frame/);
    expect(corruptMessage(good.subarray(0, 4))).toMatch(/ends inside a frame/);
    // The offset names the damaged frame.
    expect(corruptMessage(Buffer.concat([good, withByte(0, 9)]))).toMatch(new RegExp(`at stored byte ${good.length}`));
  });
});
