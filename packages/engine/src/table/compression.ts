/**
 * Block compression codecs, by the type byte each block's trailer records (FORMAT.md, "SSTable"). The type travels
 * with every block, so a table, and a database, may mix codecs: a reader decodes whatever it meets, whatever the
 * engine's `compression` option is now.
 *
 *   type  codec    stored bytes                                                   from
 *   0     none     the plain contents
 *   1     deflate  raw deflate (RFC 1951, no zlib header), level 1                node:zlib
 *   4     lz4      uint32le plain length ++ one LZ4 block                         lz4-napi (lz4_flex)
 *   7     zstd     one zstd frame (RFC 8878) with its content size in the header  node:zlib (>= 22.15), fzstd
 *   8     snappy   raw snappy (varint plain length ++ snappy elements)            snappy (napi-rs)
 *
 * LZ4 and zstd take RocksDB's numbers. Snappy's would be 1 in LevelDB and RocksDB, but 1 was deflate's on disk
 * before snappy came, and a type byte is never renumbered; 2 and 3 mean zlib and bzip2 to RocksDB, so snappy takes
 * 8, the first number RocksDB leaves unused.
 *
 * zstd is written with node:zlib, which has it from Node 22.15 / 23.8 on; on an older Node, writing zstd is refused
 * with HEAPLESS_ERR_ENGINE_UNSUPPORTED, and reading falls back to fzstd (pure JavaScript), so a zstd database written on a
 * newer Node still opens there. The native codecs (snappy, lz4) ship prebuilt per platform in npm packages; they load on
 * first use, so an engine that never meets them loads neither.
 *
 * Decoding is defensive, since the bytes come from disk: the plain length each format declares is checked against
 * what the stored bytes could expand to and against {@link MAX_PLAIN_BLOCK_SIZE} before anything is allocated, and
 * the output must have exactly that length. Errors are plain `Error`s for the table reader to report as corruption
 * of its file at the block's offset; only a codec that cannot load raises an EngineError (UNSUPPORTED).
 */
import { createRequire } from 'node:module';
import * as zlib from 'node:zlib';
import { EngineError, ErrorCodes, invalidArgument } from '../base/errors.js';
import { type Compression, ZSTD_DEFAULT_LEVEL, ZSTD_MAX_LEVEL, ZSTD_MIN_LEVEL } from '../base/options.js';

/** Compression type byte of a block trailer. On disk: never renumber. */
export const CompressionType = {
  None: 0,
  /** Raw deflate (RFC 1951, no zlib header) via node:zlib. */
  Deflate: 1,
  /** lz4_flex's size-prepended block: uint32le plain length ++ LZ4 block. RocksDB's number. */
  LZ4: 4,
  /** A zstd frame that records its content size. RocksDB's number. */
  Zstd: 7,
  /** Raw snappy. */
  Snappy: 8,
} as const;

/** node:zlib's zstd (Node >= 22.15 / 23.8), which the Node 20 type definitions do not declare. */
interface NodeZstd {
  zstdCompressSync?: (plain: Uint8Array, options: { params: Record<number, number>; pledgedSrcSize: number }) => Buffer;
  zstdDecompressSync?: (stored: Uint8Array, options: { maxOutputLength: number }) => Buffer;
  constants: { ZSTD_c_compressionLevel?: number; ZSTD_c_checksumFlag?: number };
}
const nodeZstd = zlib as unknown as NodeZstd;

// copyOutputData: the napi codecs return a plain JS buffer instead of an external one, whose finalizer costs more than
// the copy.
const COPY_OUTPUT = { copyOutputData: true } as const;

const TYPE_OF: Readonly<Record<Compression, number>> = {
  none: CompressionType.None,
  deflate: CompressionType.Deflate,
  lz4: CompressionType.LZ4,
  zstd: CompressionType.Zstd,
  snappy: CompressionType.Snappy,
};

/**
 * The largest plain block a reader accepts. A block holds entries until it reaches the block size (at most 64 MiB),
 * and one entry may be a 1 MiB key with a 256 MiB value, so a real block stays well below this; a larger declared
 * length is damage, refused before it is allocated.
 */
export const MAX_PLAIN_BLOCK_SIZE = 512 * 1024 * 1024;

// The most each format can expand its stored bytes (a bound on honest data, so that a damaged length field in a small
// block cannot allocate hundreds of megabytes): snappy's densest element is a 3-byte copy of 64 bytes; LZ4 adds 255
// to a match length per byte; deflate's limit is 1032:1 (RFC 1951's 258-byte matches in 2-bit codes).
const SNAPPY_MAX_EXPANSION = 22;
const LZ4_MAX_EXPANSION = 256;
const DEFLATE_MAX_EXPANSION = 1032;

/** The codec of trailer type `type`, by the name the `compression` option and the properties block use. */
export function compressionName(type: number): Compression | undefined {
  for (const [name, t] of Object.entries(TYPE_OF)) if (t === type) return name as Compression;
  return undefined;
}

/** Compresses the plain contents of a block for one codec; see {@link blockCompressor}. */
export interface BlockCompressor {
  /** The trailer's type byte of what `compress` returns. */
  readonly type: number;
  /** The stored form of `plain` (a new buffer; `plain` is not kept). */
  compress(plain: Uint8Array): Uint8Array;
}

/**
 * The compressor for `name` (null for 'none'), with the native codec loaded. Throws EngineError INVALID_ARGUMENT for
 * an unknown name or a zstd level outside [1, 22], UNSUPPORTED when the codec cannot be used here (zstd on a Node
 * without `zlib.zstdCompressSync`, a native binding that does not load).
 */
export function blockCompressor(name: Compression, zstdLevel: number = ZSTD_DEFAULT_LEVEL): BlockCompressor | null {
  switch (name) {
    case 'none':
      return null;
    case 'deflate':
      return { type: CompressionType.Deflate, compress: (plain) => zlib.deflateRawSync(plain, { level: 1 }) };
    case 'snappy': {
      const snappy = codecs.snappy();
      return { type: CompressionType.Snappy, compress: (plain) => snappy.compressSync(plain, COPY_OUTPUT) };
    }
    case 'lz4': {
      const lz4 = codecs.lz4();
      return { type: CompressionType.LZ4, compress: (plain) => lz4.compressSync(asBuffer(plain)) };
    }
    case 'zstd': {
      if (!Number.isInteger(zstdLevel) || zstdLevel < ZSTD_MIN_LEVEL || zstdLevel > ZSTD_MAX_LEVEL) {
        throw invalidArgument(
          `zstd level must be an integer in [${ZSTD_MIN_LEVEL}, ${ZSTD_MAX_LEVEL}], got ${zstdLevel}`,
        );
      }
      const compressSync = nodeZstd.zstdCompressSync;
      if (compressSync === undefined) {
        throw new EngineError(
          ErrorCodes.UNSUPPORTED,
          `compression 'zstd' is written with node:zlib's zstd, which Node ${process.versions.node} lacks (it needs ` +
            `Node 22.15, 23.8 or later); zstd tables written elsewhere still read here. Use 'snappy' or 'lz4'`,
        );
      }
      // No frame checksum: the block's CRC32C covers the stored bytes already.
      const c = nodeZstd.constants;
      const params = { [c.ZSTD_c_compressionLevel!]: zstdLevel, [c.ZSTD_c_checksumFlag!]: 0 };
      return {
        type: CompressionType.Zstd,
        // pledgedSrcSize puts the content size in the frame header on every Node that knows the option (one-shot
        // calls record it anyway); the reader relies on it.
        compress: (plain) => compressSync(plain, { params, pledgedSrcSize: plain.length }),
      };
    }
    default:
      throw invalidArgument(`compression must be one of ${Object.keys(TYPE_OF).join(', ')}, got ${String(name)}`);
  }
}

/**
 * The plain contents of a block stored as `stored` with trailer type `type` (not 0), in a buffer of their own that
 * the block then uses as it is (no second copy). Throws an Error describing the damage when the bytes do not decode
 * (the caller names the file and offset), EngineError UNSUPPORTED when the codec cannot load.
 */
export function decompressBlock(type: number, stored: Uint8Array): Uint8Array {
  switch (type) {
    case CompressionType.Snappy: {
      const plain = checkedLength('snappy', varint32(stored), stored.length * SNAPPY_MAX_EXPANSION + 64);
      return exactly('snappy', codecs.snappy().uncompressSync(stored, COPY_OUTPUT) as Buffer, plain);
    }
    case CompressionType.LZ4: {
      if (stored.length < 4) throw new Error(`lz4 block of ${stored.length} bytes has no length prefix`);
      const declared = (stored[0]! | (stored[1]! << 8) | (stored[2]! << 16) | (stored[3]! << 24)) >>> 0;
      const plain = checkedLength('lz4', declared, (stored.length - 4) * LZ4_MAX_EXPANSION + 64);
      return exactly('lz4', codecs.lz4().uncompressSync(stored), plain);
    }
    case CompressionType.Zstd: {
      // A frame that records a content size of 0 would have fzstd allocate its window instead (up to 2 GiB); no
      // block is empty (its restart array alone is 8 bytes), so it is damage.
      const plain = checkedLength('zstd', zstdContentSize(stored), MAX_PLAIN_BLOCK_SIZE);
      if (plain === 0) throw new Error('zstd block declares 0 plain bytes');
      // node:zlib checks that the frame decodes to its content size; fzstd (Node 20) does not, so there damage that
      // the CRC misses can reach the block parser, which still refuses a block whose restart array does not hold.
      const decompressSync = nodeZstd.zstdDecompressSync;
      const out =
        decompressSync === undefined
          ? codecs.fzstd().decompress(stored)
          : decompressSync(stored, { maxOutputLength: plain });
      return exactly('zstd', ownBytes(out), plain);
    }
    case CompressionType.Deflate: {
      const limit = Math.min(MAX_PLAIN_BLOCK_SIZE, stored.length * DEFLATE_MAX_EXPANSION + 64);
      return ownBytes(zlib.inflateRawSync(stored, { maxOutputLength: limit }));
    }
    default:
      throw new Error(`unknown compression type ${type}`);
  }
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length);
}

function checkedLength(codec: string, declared: number, bound: number): number {
  if (declared < 0) throw new Error(`${codec} block has a malformed length header`);
  if (declared > MAX_PLAIN_BLOCK_SIZE || declared > bound) {
    throw new Error(`${codec} block declares ${declared} plain bytes, more than its stored bytes can hold`);
  }
  return declared;
}

/**
 * `out` as a plain Uint8Array, copied when it is a small view of a larger buffer: node:zlib hands back a view of its
 * output chunk (16 KiB on Node 20, 64 KiB on Node 24), which a cached 4 KiB block would otherwise keep alive whole.
 * The copy is one memcpy of the block, beside a decode that costs ten to a hundred times more; lz4 and fzstd decode
 * straight into a buffer of the block's size, and snappy's binding copies its output once into a JS buffer
 * (COPY_OUTPUT), none of which is copied again here.
 */
function ownBytes(out: Uint8Array): Uint8Array {
  const view = new Uint8Array(out.buffer, out.byteOffset, out.length);
  return out.buffer.byteLength > out.length * 2 ? view.slice() : view;
}

/** A plain Uint8Array over `out` (one hidden class for every block's data), checked to be `length` bytes. */
function exactly(codec: string, out: Uint8Array, length: number): Uint8Array {
  if (out.length !== length)
    throw new Error(`${codec} block decodes to ${out.length} bytes, not the ${length} declared`);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** The varint32 at the start of `b` (snappy's plain length), or -1 if malformed. */
function varint32(b: Uint8Array): number {
  let v = 0;
  for (let i = 0; i < 5 && i < b.length; i++) {
    const byte = b[i]!;
    v += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return v <= 0xffff_ffff ? v : -1;
  }
  return -1;
}

/**
 * The Frame_Content_Size of the zstd frame at the start of `b` (RFC 8878, 3.1.1.1), or -1 if `b` does not start with
 * a zstd frame header that records it.
 */
function zstdContentSize(b: Uint8Array): number {
  // Magic 0xFD2FB528, little-endian.
  if (b.length < 6 || b[0] !== 0x28 || b[1] !== 0xb5 || b[2] !== 0x2f || b[3] !== 0xfd) return -1;
  const descriptor = b[4]!;
  const fcsFlag = descriptor >>> 6;
  const singleSegment = (descriptor >>> 5) & 1;
  const dictFlag = descriptor & 3;
  const fcsBytes = fcsFlag === 0 ? singleSegment : 1 << fcsFlag; // 0, 1, 2, 4 or 8
  if (fcsBytes === 0) return -1;
  let at = 5 + (singleSegment ? 0 : 1) + (dictFlag === 3 ? 4 : dictFlag);
  if (at + fcsBytes > b.length) return -1;
  let size = 0;
  for (let i = 0; i < fcsBytes; i++) size += b[at++]! * 2 ** (8 * i);
  return fcsBytes === 2 ? size + 256 : size;
}

interface Snappy {
  compressSync(input: Uint8Array, options?: { copyOutputData?: boolean }): Buffer;
  uncompressSync(input: Uint8Array, options?: { copyOutputData?: boolean }): Buffer | string;
}
interface Lz4 {
  compressSync(data: Buffer): Buffer;
  uncompressSync(data: Uint8Array): Buffer;
}
interface Fzstd {
  decompress(data: Uint8Array): Uint8Array;
}

/**
 * The codec packages, each loaded on first use and then kept (require() would keep them too, but resolving the name
 * again on every block read costs more than the block). Immutable once loaded; one copy per thread.
 */
const codecs = (() => {
  const require = createRequire(import.meta.url);
  const loaded = new Map<string, unknown>();
  function load<T>(pkg: string, codec: string): T {
    let m = loaded.get(pkg);
    if (m === undefined) {
      try {
        m = require(pkg);
      } catch (cause) {
        throw new EngineError(
          ErrorCodes.UNSUPPORTED,
          `compression '${codec}' needs the npm package ${pkg}, which does not load on ${process.platform}-${process.arch}: ${(cause as Error).message}`,
          { cause },
        );
      }
      loaded.set(pkg, m);
    }
    return m as T;
  }
  return {
    snappy: () => load<Snappy>('snappy', 'snappy'),
    lz4: () => load<Lz4>('lz4-napi', 'lz4'),
    fzstd: () => load<Fzstd>('fzstd', 'zstd'),
  };
})();
