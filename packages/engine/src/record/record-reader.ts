/**
 * Reads back the logical records of a log file (see record-format.ts and FORMAT.md "Log files").
 *
 * A torn tail, what a crash leaves when it interrupts the last write, ends the log quietly: those bytes were never
 * acknowledged as durable. What may count as one depends on the log (`TailPolicy`): for a WAL, whose unsynced tail a
 * power loss may leave as any garbage, a last fragment that fails in any way with nothing valid after it; for the
 * manifest, every record of which was synced before it was acted on, only a fragment cut short by the end of the
 * file (or zeros where it should start), so a damaged last edit is never mistaken for one that was never written.
 * Anything else that does not hold (a bad checksum followed by more records, a MIDDLE without a FIRST, an unknown
 * type) is a CorruptionError naming the file and offset.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { crc32c, unmaskCrc } from '../base/crc32c.js';
import { CorruptionError, ioError } from '../base/errors.js';
import { BLOCK_SIZE, HEADER_SIZE, RecordType } from './record-format.js';

/**
 * What may end a log quietly as a torn tail. `damaged`: a last fragment that is cut short, zeroed or fails its
 * checksum, with no valid fragment after it (WALs). `cut`: only a last fragment cut short by the end of the file, its
 * header intact and its length possible, or zeros from where it starts to the end (the manifest).
 */
export type TailPolicy = 'damaged' | 'cut';

export class RecordReader {
  readonly path: string;
  private readonly policy: TailPolicy;
  private readonly data: Buffer;
  /** File offset of `data[0]`: 0, or the start of the block `start` lies in (block arithmetic stays the file's). */
  private readonly base: number;
  private pos = 0;
  /** Offset just past the last complete logical record returned. */
  private goodEnd = 0;
  /** Offset of the first byte of the record `readRecord` returned last. */
  recordOffset = 0;
  /** True once a torn tail was found and dropped. */
  tornTail = false;

  /**
   * Reads the file into memory, from the block holding `start` (the end of a record read before, for a reader that
   * tails a log another process appends to) to its end; records are read from `start`. Throws EngineError
   * HEAPLESS_ERR_ENGINE_IO if it cannot be read.
   */
  constructor(path: string, policy: TailPolicy = 'damaged', start = 0) {
    this.path = path;
    this.policy = policy;
    this.base = start - (start % BLOCK_SIZE);
    this.pos = start - this.base;
    this.goodEnd = start;
    try {
      this.data = start === 0 ? readFileSync(path) : readFrom(path, this.base);
    } catch (err) {
      throw ioError('reading', path, err);
    }
  }

  /** Bytes in the file (as read). */
  get fileSize(): number {
    return this.base + this.data.length;
  }

  /** Bytes of the log up to the end of the last good record. */
  get validLength(): number {
    return this.goodEnd;
  }

  /**
   * The next logical record, or undefined at the end of the log (including a dropped torn tail). A FULL record is a
   * view into the file's bytes; a fragmented one is a fresh copy. Throws CorruptionError.
   */
  readRecord(): Uint8Array | undefined {
    const data = this.data;
    let parts: Uint8Array[] | undefined;
    let recordStart = -1;
    for (;;) {
      const inBlock = this.pos % BLOCK_SIZE;
      if (BLOCK_SIZE - inBlock < HEADER_SIZE) {
        this.pos += BLOCK_SIZE - inBlock; // the block's trailer
        continue;
      }
      const at = this.pos;
      if (at >= data.length) {
        if (parts) this.tornTail = true; // FIRST (and MIDDLEs) without LAST at the end of the file
        return undefined;
      }
      if (at + HEADER_SIZE > data.length) return this.damaged(at, 'header runs past the end of the file', true);
      const length = data[at + 4]! | (data[at + 5]! << 8);
      const type = data[at + 6]!;
      const end = at + HEADER_SIZE + length;
      if (type === RecordType.Zero && length === 0 && data.readUInt32LE(at) === 0) {
        // Zeroed space: preallocation, or a crash after the file grew but before its data landed.
        return this.damaged(at, 'zeroed record header', this.zeroFrom(at));
      }
      if (end > data.length) {
        return this.damaged(at, `record length ${length} runs past the end of the file`, this.cutShort(at, inBlock));
      }
      if (inBlock + HEADER_SIZE + length > BLOCK_SIZE) {
        return this.damaged(at, `record length ${length} crosses a block boundary`, false);
      }
      if (crc32c(data.subarray(at + 6, end)) !== unmaskCrc(data.readUInt32LE(at))) {
        return this.damaged(at, 'log record checksum mismatch', false);
      }
      this.pos = end;
      const payload = data.subarray(at + HEADER_SIZE, end);
      switch (type) {
        case RecordType.Full:
          if (parts) throw new CorruptionError(this.path, this.base + at, 'FULL record inside a fragmented record');
          return this.done(at, end, payload);
        case RecordType.First:
          if (parts) throw new CorruptionError(this.path, this.base + at, 'FIRST record inside a fragmented record');
          parts = [payload];
          recordStart = at;
          break;
        case RecordType.Middle:
          if (!parts) throw new CorruptionError(this.path, this.base + at, 'MIDDLE record without a FIRST');
          parts.push(payload);
          break;
        case RecordType.Last:
          if (!parts) throw new CorruptionError(this.path, this.base + at, 'LAST record without a FIRST');
          parts.push(payload);
          return this.done(recordStart, end, Buffer.concat(parts));
        default:
          throw new CorruptionError(this.path, this.base + at, `unknown log record type ${type}`);
      }
    }
  }

  private done(start: number, end: number, payload: Uint8Array): Uint8Array {
    this.recordOffset = this.base + start;
    this.goodEnd = this.base + end;
    return payload;
  }

  /**
   * A record at `at` does not hold. It is the torn tail of an interrupted write, and the log ends here, if nothing
   * valid follows it and, under the `cut` policy, it was cut short (`cut`); otherwise the log is damaged.
   */
  private damaged(at: number, what: string, cut: boolean): undefined {
    if ((this.policy === 'cut' && !cut) || !this.nothingValidAfter(at)) {
      throw new CorruptionError(this.path, this.base + at, what);
    }
    this.tornTail = true;
    this.pos = this.data.length;
    return undefined;
  }

  /** True if every byte from `at` to the end of the file is zero. */
  private zeroFrom(at: number): boolean {
    const data = this.data;
    for (let p = at; p < data.length; p++) if (data[p] !== 0) return false;
    return true;
  }

  /**
   * True if the fragment at `at`, which runs past the end of the file, can be one whose write was cut short: a known
   * type, a length that fits its block, and a checksum that the bytes up to the end of the file do not already match
   * (if they do, the fragment is whole and its length field is what is damaged).
   */
  private cutShort(at: number, inBlock: number): boolean {
    const data = this.data;
    const length = data[at + 4]! | (data[at + 5]! << 8);
    const type = data[at + 6]!;
    if (type < RecordType.Full || type > RecordType.Last) return false;
    if (inBlock + HEADER_SIZE + length > BLOCK_SIZE) return false;
    return crc32c(data.subarray(at + 6)) !== unmaskCrc(data.readUInt32LE(at));
  }

  /**
   * True when no well-formed fragment with a good checksum starts after `from`: the bad record is the interrupted
   * last write rather than damage in the middle of the log. Checks the rest of the current block and the start of
   * every later block.
   */
  private nothingValidAfter(at: number): boolean {
    const data = this.data;
    // The damaged header may have a wrong length, so try every later offset in its block...
    const blockEnd = Math.min(data.length, at - (at % BLOCK_SIZE) + BLOCK_SIZE);
    for (let p = at + 1; p + HEADER_SIZE <= blockEnd; p++) if (this.validFragmentAt(p)) return false;
    // ...and the start of every later block: a block always begins with a fragment header.
    for (let p = blockEnd; p + HEADER_SIZE <= data.length; p += BLOCK_SIZE) if (this.validFragmentAt(p)) return false;
    return true;
  }

  private validFragmentAt(at: number): boolean {
    const data = this.data;
    const length = data[at + 4]! | (data[at + 5]! << 8);
    const type = data[at + 6]!;
    const end = at + HEADER_SIZE + length;
    if (type < RecordType.Full || type > RecordType.Last || end > data.length) return false;
    if ((at % BLOCK_SIZE) + HEADER_SIZE + length > BLOCK_SIZE) return false;
    return crc32c(data.subarray(at + 6, end)) === unmaskCrc(data.readUInt32LE(at));
  }
}

/** The bytes of the file at `path` from `offset` to its end. */
function readFrom(path: string, offset: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = Math.max(0, fstatSync(fd).size - offset);
    const out = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, out, got, size - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    return got === size ? out : out.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/**
 * The start of the first logical record of the log at `path`: the payload of its first fragment (FULL or FIRST)
 * when that fragment lies whole in the first block with a good checksum; undefined for an empty log or one whose
 * first fragment does not hold (the caller then reads the log whole, where a RecordReader names the damage). Reads
 * one block, not the file: what `updatesSince` uses to skip logs that end before the sequence asked.
 */
export function firstFragment(path: string): Uint8Array | undefined {
  let data: Buffer;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw ioError('reading', path, err);
  }
  try {
    data = Buffer.allocUnsafe(BLOCK_SIZE);
    data = data.subarray(0, readSync(fd, data, 0, BLOCK_SIZE, 0));
  } catch (err) {
    throw ioError('reading', path, err);
  } finally {
    closeSync(fd);
  }
  if (data.length < HEADER_SIZE) return undefined;
  const length = data[4]! | (data[5]! << 8);
  const type = data[6]!;
  const end = HEADER_SIZE + length;
  if ((type !== RecordType.Full && type !== RecordType.First) || end > data.length) return undefined;
  if (crc32c(data.subarray(6, end)) !== unmaskCrc(data.readUInt32LE(0))) return undefined;
  return data.subarray(HEADER_SIZE, end);
}
