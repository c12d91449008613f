import { readU32LE } from '../base/coding.js';
import { CorruptionError } from '../base/errors.js';

/**
 * A decoded block (the contents written by BlockBuilder, after its trailer was checked and stripped). A Block is
 * immutable once made, so one instance is shared by every reader through the block cache, and views into it (values
 * handed to callers) stay valid for as long as the caller keeps them. Its cursor is BlockIterator (block-iterator.ts).
 */
export class Block {
  /** The block's contents: entries then the restart array. */
  readonly data: Uint8Array;
  /** Offset of the restart array, which is also the end of the entries. */
  readonly restartsOffset: number;
  readonly numRestarts: number;
  /** File the block came from and its offset there, named by CorruptionErrors raised while decoding it. */
  readonly file: string;
  readonly fileOffset: number;

  /** Throws CorruptionError if the restart array cannot be right. */
  constructor(data: Uint8Array, file: string, fileOffset: number) {
    if (data.length < 4) throw new CorruptionError(file, fileOffset, `block of ${data.length} bytes is too short`);
    const n = readU32LE(data, data.length - 4);
    const max = (data.length - 4) / 4;
    if (n < 1 || n > max) {
      throw new CorruptionError(
        file,
        fileOffset + data.length - 4,
        `bad restart count ${n} in a ${data.length}-byte block`,
      );
    }
    this.data = data;
    this.numRestarts = n;
    this.restartsOffset = data.length - 4 - n * 4;
    this.file = file;
    this.fileOffset = fileOffset;
  }

  /** Offset of the i-th restart point's entry. */
  restartPoint(i: number): number {
    return readU32LE(this.data, this.restartsOffset + i * 4);
  }

  /** Bytes this block holds in memory, as charged by the block cache. */
  get charge(): number {
    return this.data.byteLength;
  }
}
