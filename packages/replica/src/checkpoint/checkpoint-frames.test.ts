import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, rmSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReplicaError } from '../errors.js';
import { writeChecked } from './checkpoint-files.js';
import {
  decodeLz4Block,
  encodeFrame,
  FRAME_HEADER_BYTES,
  FRAME_PLAIN_BYTES,
  FrameDecoder,
  FrameKind,
} from './checkpoint-frames.js';
import type { CheckpointFile } from './checkpoint-manifest.js';

/** Runs `f` with a new directory under `base`, removed afterwards whatever happens. */
async function inTempDir(base: string, prefix: string, f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(base, prefix));
  try {
    await f(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A file's chunks encoded, then cut at `cuts` (offsets into the stored bytes), then decoded. */
function roundTrip(chunks: Uint8Array[], cuts: number[]): Uint8Array {
  const stored = Buffer.concat(chunks.map(encodeFrame));
  const decoder = new FrameDecoder('test');
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (stored.length + 1)))].sort((a, b) => a - b)) {
    for (const plain of decoder.frames(stored.subarray(at, cut))) out.push(plain.slice());
    at = cut;
  }
  for (const plain of decoder.frames(stored.subarray(at))) out.push(plain.slice());
  decoder.end();
  return Buffer.concat(out);
}

function corruptMessage(stored: Uint8Array): string {
  try {
    const decoder = new FrameDecoder('obj');
    for (const _ of decoder.frames(stored));
    decoder.end();
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
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

  it('decodes LZ4 blocks as the native codec encodes them: long literals, long and overlapping matches', () => {
    const lz4 = createRequire(import.meta.url)('lz4-napi') as { compressSync(b: Buffer): Buffer };
    const block = (plain: Buffer) => lz4.compressSync(plain).subarray(4); // past lz4_flex's size prefix
    const samples = [
      randomBytes(70_000), // one sequence of literals, its length in many extension bytes
      Buffer.alloc(200_000, 'a'), // matches of offset 1 that overlap what they write
      Buffer.from('abc'.repeat(40_000)), // overlapping matches of a 3-byte pattern
      Buffer.concat([randomBytes(500), randomBytes(3), Buffer.alloc(5000, 7), randomBytes(20)]),
      Buffer.from([1]),
    ];
    for (const plain of samples) {
      const out = new Uint8Array(plain.length);
      expect(decodeLz4Block(block(plain), out)).toBe(plain.length);
      expect(Buffer.from(out).equals(plain)).toBe(true);
      // An output one byte short is refused, not overrun.
      expect(decodeLz4Block(block(plain), new Uint8Array(plain.length - 1))).toEqual(expect.any(String));
    }
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 2000 }), fc.integer({ min: 1, max: 50 }), (bytes, n) => {
        const plain = Buffer.concat(Array.from({ length: n }, () => bytes));
        const out = new Uint8Array(plain.length);
        expect(decodeLz4Block(block(plain), out)).toBe(plain.length);
        expect(Buffer.from(out).equals(plain)).toBe(true);
      }),
    );
  });

  it('answers a malformed LZ4 block with why, never reading or writing outside its buffers', () => {
    expect(decodeLz4Block(new Uint8Array(0), new Uint8Array(8))).toMatch(/empty/);
    expect(decodeLz4Block(Uint8Array.from([0x10, 0x61, 0x00, 0x00]), new Uint8Array(8))).toMatch(/offset of 0/);
    expect(decodeLz4Block(Uint8Array.from([0x10, 0x61, 0x02, 0x00]), new Uint8Array(8))).toMatch(/offset of 2/);
    expect(decodeLz4Block(Uint8Array.from([0xf0, 0xff]), new Uint8Array(8))).toMatch(/literal length past the end/);
    expect(decodeLz4Block(Uint8Array.from([0x20, 0x61]), new Uint8Array(8))).toMatch(
      /literals past the end of the block/,
    );
    expect(decodeLz4Block(Uint8Array.from([0x10, 0x61, 0x01]), new Uint8Array(8))).toMatch(/offset past the end/);
    expect(decodeLz4Block(Uint8Array.from([0x1f, 0x61, 0x01, 0x00]), new Uint8Array(64))).toMatch(/match length past/);
    expect(decodeLz4Block(Uint8Array.from([0x1f, 0x61, 0x01, 0x00, 0x00]), new Uint8Array(8))).toMatch(
      /match past the end/,
    );
    expect(decodeLz4Block(Uint8Array.from([0x10, 0x61, 0x01, 0x00]), new Uint8Array(8))).toMatch(/ends with a match/);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 600 }), (src, cap) => {
        const out = new Uint8Array(cap + 16).fill(0xee);
        const r = decodeLz4Block(src, out.subarray(0, cap));
        if (typeof r === 'number') expect(r).toBeLessThanOrEqual(cap);
        else expect(r.length).toBeGreaterThan(0);
        expect(out.subarray(cap).every((b) => b === 0xee)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('writeChecked of lz4-frames', () => {
  /** 24 frames, each a different repeated pattern, so that a buffer reused before its write is done shows. */
  const plainFrames = Array.from({ length: 24 }, (_, i) =>
    Buffer.from(`frame ${i} `.repeat(FRAME_PLAIN_BYTES / 8)).subarray(0, FRAME_PLAIN_BYTES - i * 1000),
  );
  const plain = Buffer.concat(plainFrames);
  const stored = Buffer.concat(plainFrames.map(encodeFrame));
  const expected: CheckpointFile = {
    path: 'f',
    size: plain.length,
    sha256: createHash('sha256').update(plain).digest('hex'),
  };
  const streamOf = (bytes: Uint8Array, cuts: number[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        let at = 0;
        for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
          if (cut > at) controller.enqueue(bytes.slice(at, cut));
          at = Math.max(at, cut);
        }
        controller.enqueue(bytes.slice(at));
        controller.close();
      },
    });

  it('writes the plain bytes, decoded frame by frame into reused buffers, however the chunks are cut', async () => {
    await inTempDir(tmpdir(), 'frames-', async (dir) => {
      // One chunk holding every frame (more frames than buffers), then random cuts.
      const cutSets = [[], ...Array.from({ length: 4 }, (_, r) => [1 + r, 9, 5000 * (r + 1), stored.length >> 1])];
      for (const [n, cuts] of cutSets.entries()) {
        const file = join(dir, `out${n}`);
        await writeChecked(streamOf(stored, cuts), file, expected, 'obj', {
          idleMs: 5000,
          sync: n === 0,
          hash: true,
          frames: true,
        });
        expect(Buffer.compare(await readFile(file), plain)).toBe(0);
      }
    });
  });

  it('a damaged frame or a wrong size is CHECKPOINT_CORRUPT', async () => {
    await inTempDir(tmpdir(), 'frames-', async (dir) => {
      const damaged = Buffer.from(stored);
      damaged[FRAME_HEADER_BYTES + 4 + 10] ^= 0xff; // inside the first LZ4 block
      const cases: [Uint8Array, CheckpointFile][] = [
        [damaged, expected],
        [stored.subarray(0, stored.length - 3), expected],
        [stored, { ...expected, size: plain.length - 1 }],
      ];
      for (const [n, [bytes, file]] of cases.entries()) {
        const written = writeChecked(streamOf(bytes, [100]), join(dir, `bad${n}`), file, 'obj', {
          idleMs: 5000,
          sync: false,
          hash: true,
          frames: true,
        });
        await expect(written).rejects.toMatchObject({ code: 'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT' });
      }
    });
  });
});

describe('writeChecked around the page cache (direct)', () => {
  const streamOfChunks = (chunks: Uint8Array[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
  /** Cuts `bytes` into pieces of the given sizes, in turn (the last piece takes what is left). */
  const cut = (bytes: Uint8Array, sizes: number[]): Uint8Array[] => {
    const out: Uint8Array[] = [];
    let at = 0;
    for (let i = 0; at < bytes.length; i++) {
      const n = sizes[i % sizes.length]!;
      out.push(bytes.slice(at, at + n));
      at += n;
    }
    return out;
  };
  /** Whether the file system of `dir` takes O_DIRECT, asked of the system directly. */
  const takesDirect = (dir: string): boolean => {
    const path = join(dir, 'probe');
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_DIRECT, 0o666));
      return true;
    } catch {
      return false;
    } finally {
      rmSync(path, { force: true });
    }
  };
  const sizes = [
    0,
    1,
    4095,
    4096,
    FRAME_PLAIN_BYTES - 1,
    FRAME_PLAIN_BYTES,
    FRAME_PLAIN_BYTES + 1,
    3 * FRAME_PLAIN_BYTES + 12_345,
  ];
  const texts = (n: number) => Buffer.from('a map image, more or less '.repeat(Math.ceil(n / 26) + 1)).subarray(0, n);

  it.each([
    ['a temporary directory', tmpdir()],
    // tmpfs: O_DIRECT since Linux 6.6, refused before (the writer then writes through the page cache).
    ['tmpfs', '/dev/shm'],
  ])('writes every byte in order, whatever the sizes and the source, in %s', async (_, base) => {
    await inTempDir(base, 'direct-', async (dir) => {
      const direct = takesDirect(dir);
      let n = 0;
      for (const size of sizes) {
        for (const [kind, plain] of [
          ['text', texts(size)],
          ['random', randomBytes(size)],
        ] as const) {
          const expected: CheckpointFile = {
            path: 'f',
            size,
            sha256: createHash('sha256').update(plain).digest('hex'),
          };
          const framed = Buffer.concat(cut(plain, [FRAME_PLAIN_BYTES]).map(encodeFrame));
          const sources: [string, Uint8Array[], boolean][] = [
            ['frames', cut(framed, [70_000, 3, 1 << 20]), true],
            ['plain chunks', cut(plain, [5000, 1 << 20, 4096, 1]), false],
          ];
          for (const [form, chunks, frames] of sources) {
            const pushed = createHash('sha256');
            const file = join(dir, `f${n++}`);
            const result = await writeChecked(streamOfChunks(chunks), file, expected, 'obj', {
              idleMs: 5000,
              sync: false,
              hash: true,
              frames,
              direct: true,
              check: { push: (bytes) => pushed.update(bytes) },
            });
            expect({ kind, form, size, direct: result.direct }).toEqual({ kind, form, size, direct });
            expect(Buffer.compare(await readFile(file), plain)).toBe(0);
            expect(pushed.digest('hex')).toBe(expected.sha256);
          }
        }
      }
    });
  });

  it('where the file system refuses O_DIRECT (EINVAL once the file is made), it writes through the page cache', async () => {
    await inTempDir(tmpdir(), 'direct-', async (dir) => {
      const plain = texts(FRAME_PLAIN_BYTES + 77);
      const expected: CheckpointFile = { path: 'f', size: plain.length, sha256: '' };
      const opened: (string | number)[] = [];
      // As tmpfs before Linux 6.6 does: the file is created, then the open fails.
      const refusing = (async (path: string, flags: string | number, mode?: number) => {
        opened.push(flags);
        if (typeof flags === 'number' && (flags & constants.O_DIRECT) !== 0) {
          await (await open(path, 'wx', mode)).close();
          throw Object.assign(new Error('EINVAL: invalid argument, open'), { code: 'EINVAL' });
        }
        return open(path, flags, mode);
      }) as typeof open;
      const file = join(dir, 'f');
      const result = await writeChecked(streamOfChunks(cut(plain, [70_000])), file, expected, 'obj', {
        idleMs: 5000,
        sync: true,
        hash: false,
        direct: true,
        openFile: refusing,
      });
      expect(result).toEqual({ direct: false });
      expect(opened).toEqual([expect.any(Number), 'wx']);
      expect(Buffer.compare(await readFile(file), plain)).toBe(0);
    });
  });

  it('a wrong size is CHECKPOINT_CORRUPT with direct writes too', async () => {
    await inTempDir(tmpdir(), 'direct-', async (dir) => {
      const plain = texts(2 * FRAME_PLAIN_BYTES + 5);
      const expected: CheckpointFile = { path: 'f', size: plain.length - 1, sha256: '' };
      const written = writeChecked(streamOfChunks([plain]), join(dir, 'f'), expected, 'obj', {
        idleMs: 5000,
        sync: true,
        hash: false,
        direct: true,
      });
      await expect(written).rejects.toMatchObject({ code: 'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT' });
    });
  });
});
