/**
 * The SSTable format's constants and its fixed-layout parts: block handles, block trailers and the footer (FORMAT.md
 * "SSTable"). The builder writes them and the reader parses them through these functions only, so the two cannot
 * drift apart.
 *
 *   table   = dataBlock* | filterBlock? | propertiesBlock | metaindexBlock | indexBlock | footer
 *   block   = stored bytes | trailer
 *   trailer = compression type u8 | maskCrc(crc32c(stored bytes ++ type)) u32le                     (5 bytes)
 *   handle  = offset varint64 | size varint64                      (size of the stored bytes, without the trailer)
 *   footer  = metaindex offset u64le | metaindex size u32le | index offset u64le | index size u32le |
 *             format version u32le | maskCrc(crc32c(the 28 bytes before)) u32le | magic "heapless"   (40 bytes)
 */
import { type Cursor, getVarint64, putVarint64, readU32LE, readU64LE, writeU32LE, writeU64LE } from '../base/coding.js';
import { crc32c, maskCrc, unmaskCrc } from '../base/crc32c.js';
import { CorruptionError } from '../base/errors.js';

/** Bytes after every block: compression type (1) + masked CRC32C (4). */
export const BLOCK_TRAILER_SIZE = 5;

/** The compression type byte of a block trailer: the codecs' numbers live with the codecs, in compression.ts. */
export { CompressionType } from './compression.js';

/** Metaindex key of the bloom filter block. */
export const FILTER_META_KEY = 'filter.bloom';
/** Metaindex key of the properties block. */
export const PROPERTIES_META_KEY = 'properties';

/** Tables stay below 4 GiB, so that block offsets fit the block cache key and the footer's 32-bit sizes. */
export const MAX_TABLE_SIZE = 2 ** 32 - 1;

/** Most bytes an encoded block handle takes: two varint64s. */
export const MAX_BLOCK_HANDLE_LENGTH = 16;

/** Where a block's stored bytes lie in the file. A caller-owned cell that decoders fill, so that decoding allocates nothing. */
export class BlockHandle {
  constructor(
    /** File offset of the block's first byte. */
    public offset = 0,
    /** Bytes stored, without the trailer. */
    public size = 0,
  ) {}
}

/** Writes the handle (offset, size) at `out[at..)`; returns the offset after it (at most 16 bytes on). */
export function encodeBlockHandle(out: Uint8Array, at: number, offset: number, size: number): number {
  return putVarint64(out, putVarint64(out, at, offset), size);
}

/**
 * Reads a handle at `buf[pos[0]..limit)` into `into`, advancing `pos[0]`. Returns false (with `into` undefined) if
 * either varint is malformed or runs past `limit`: the caller names the file and offset in its CorruptionError.
 */
export function decodeBlockHandle(buf: Uint8Array, pos: Cursor, limit: number, into: BlockHandle): boolean {
  const offset = getVarint64(buf, pos, limit);
  if (offset < 0) return false;
  const size = getVarint64(buf, pos, limit);
  if (size < 0) return false;
  into.offset = offset;
  into.size = size;
  return true;
}

/**
 * Fills `trailer[0..5)` with the trailer of a block whose stored bytes are `stored` and whose compression type is
 * `type`.
 */
export function writeBlockTrailer(trailer: Uint8Array, stored: Uint8Array, type: number): void {
  trailer[0] = type;
  writeU32LE(trailer, 1, maskCrc(crc32c(trailer.subarray(0, 1), crc32c(stored))));
}

/** True if the trailer at `buf[at+size..at+size+5)` holds the checksum of the block stored at `buf[at..at+size)`. */
export function blockChecksumMatches(buf: Uint8Array, at: number, size: number): boolean {
  return unmaskCrc(readU32LE(buf, at + size + 1)) === crc32c(buf.subarray(at, at + size + 1));
}

/** Bytes of the footer at the end of every table. */
export const FOOTER_SIZE = 40;

/** Magic number at the very end of every table: the bytes "heapless" read as a little-endian uint64. */
export const TABLE_MAGIC = new Uint8Array([0x68, 0x65, 0x61, 0x70, 0x6c, 0x65, 0x73, 0x73]);

/** Table format version written in the footer; readers reject versions they do not know. */
export const TABLE_FORMAT_VERSION = 1;

// Field offsets inside the footer.
const F_META_OFFSET = 0;
const F_META_SIZE = 8;
const F_INDEX_OFFSET = 12;
const F_INDEX_SIZE = 20;
const F_VERSION = 24;
const F_CRC = 28;
const F_MAGIC = 32;

/** What the footer points at. */
export interface Footer {
  metaindex: BlockHandle;
  index: BlockHandle;
}

/** The footer naming the metaindex and index blocks. Block sizes must fit 32 bits (tables stay below 4 GiB). */
export function encodeFooter(footer: Footer): Uint8Array {
  const out = new Uint8Array(FOOTER_SIZE);
  writeU64LE(out, F_META_OFFSET, footer.metaindex.offset);
  writeU32LE(out, F_META_SIZE, footer.metaindex.size);
  writeU64LE(out, F_INDEX_OFFSET, footer.index.offset);
  writeU32LE(out, F_INDEX_SIZE, footer.index.size);
  writeU32LE(out, F_VERSION, TABLE_FORMAT_VERSION);
  writeU32LE(out, F_CRC, maskCrc(crc32c(out.subarray(0, F_CRC))));
  out.set(TABLE_MAGIC, F_MAGIC);
  return out;
}

/**
 * Parses the footer held at `buf[at..at+40)`, read from offset `fileOffset` of `file`. Checks the magic, then the CRC,
 * then the version; throws CorruptionError naming the offset of the field at fault.
 */
export function decodeFooter(buf: Uint8Array, at: number, file: string, fileOffset: number): Footer {
  for (let i = 0; i < TABLE_MAGIC.length; i++) {
    if (buf[at + F_MAGIC + i] !== TABLE_MAGIC[i])
      throw new CorruptionError(file, fileOffset + F_MAGIC, 'bad table magic number');
  }
  if (unmaskCrc(readU32LE(buf, at + F_CRC)) !== crc32c(buf.subarray(at, at + F_CRC))) {
    throw new CorruptionError(file, fileOffset, 'footer checksum mismatch');
  }
  const version = readU32LE(buf, at + F_VERSION);
  if (version !== TABLE_FORMAT_VERSION) {
    throw new CorruptionError(file, fileOffset + F_VERSION, `unknown table format version ${version}`);
  }
  return {
    metaindex: new BlockHandle(readU64LE(buf, at + F_META_OFFSET), readU32LE(buf, at + F_META_SIZE)),
    index: new BlockHandle(readU64LE(buf, at + F_INDEX_OFFSET), readU32LE(buf, at + F_INDEX_SIZE)),
  };
}
