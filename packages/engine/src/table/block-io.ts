/**
 * Reading a table's blocks from its file: exact reads, and turning a block's stored bytes and trailer (table-format.ts)
 * into its contents, its checksum checked and its codec (compression.ts) undone. Every failure is a CorruptionError naming the file and
 * the block's offset, or EngineError IO.
 */
import { readSync } from 'node:fs';
import { CorruptionError, EngineError, ioError } from '../base/errors.js';
import { CompressionType, compressionName, decompressBlock } from './compression.js';
import { BLOCK_TRAILER_SIZE, blockChecksumMatches } from './table-format.js';

/** Reads `length` bytes at `offset`; throws CorruptionError if the file ends first, EngineError IO on a read error. */
export function readExactly(fd: number, path: string, offset: number, length: number): Buffer {
  const buf = Buffer.allocUnsafeSlow(length);
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = readSync(fd, buf, done, length - done, offset + done);
    } catch (cause) {
      throw ioError('reading', `${path} at offset ${offset + done}`, cause);
    }
    if (n === 0) throw new CorruptionError(path, offset + done, `file ends ${length - done} bytes early`);
    done += n;
  }
  return buf;
}

/**
 * The contents of the block at file offset (offset, size), taken from `buf`, which holds the file's bytes from
 * `bufStart` up to at least `limit` (the caller checked `offset >= bufStart`). The block and its trailer must end at
 * or before `limit`. Checks the CRC when asked and decompresses; an uncompressed block is a view into `buf`.
 */
export function blockContentsAt(
  buf: Uint8Array,
  bufStart: number,
  path: string,
  offset: number,
  size: number,
  limit: number,
  verify: boolean,
): Uint8Array {
  checkBlockEnds(path, offset, size, limit);
  return decodeBlock(buf, offset - bufStart, path, offset, size, verify);
}

/** Throws CorruptionError unless the block at (offset, size) and its trailer end at or before `limit`. */
function checkBlockEnds(path: string, offset: number, size: number, limit: number): void {
  if (offset + size + BLOCK_TRAILER_SIZE > limit) {
    throw new CorruptionError(path, offset, `block of ${size} bytes at ${offset} runs past ${limit}`);
  }
}

/**
 * Reads the block at (offset, size) plus its trailer, which must end at or before `limit`; checks the CRC when asked
 * and decompresses. Returns the contents in a buffer of their own.
 */
export function readBlockContents(
  fd: number,
  path: string,
  offset: number,
  size: number,
  limit: number,
  verify: boolean,
): Uint8Array {
  checkBlockEnds(path, offset, size, limit);
  return decodeBlock(readExactly(fd, path, offset, size + BLOCK_TRAILER_SIZE), 0, path, offset, size, verify);
}

/**
 * Checks and unpacks the block whose stored bytes and trailer are at `buf[at..at+size+5)` (read from file offset
 * `offset`). Returns a plain Uint8Array over `buf`'s memory when the block is not compressed: every block the
 * iterators see then has one hidden class, and value views are cheap TypedArray subarrays, not Buffer constructions.
 */
export function decodeBlock(
  buf: Uint8Array,
  at: number,
  path: string,
  offset: number,
  size: number,
  verify: boolean,
): Uint8Array {
  const type = buf[at + size]!;
  if (verify && !blockChecksumMatches(buf, at, size)) {
    throw new CorruptionError(path, offset, 'block checksum mismatch');
  }
  if (type === CompressionType.None) return new Uint8Array(buf.buffer, buf.byteOffset + at, size);
  try {
    return decompressBlock(type, buf.subarray(at, at + size));
  } catch (err) {
    if (err instanceof EngineError) throw err; // a codec that does not load here: not the file's fault
    const codec = compressionName(type) ?? `compression type ${type}`;
    throw new CorruptionError(path, offset, `${codec} block does not decompress: ${(err as Error).message}`);
  }
}
