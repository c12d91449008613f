/**
 * Appends logical records in the log format (see record-format.ts and FORMAT.md "Log files") to an instance-owned
 * buffer, and writes that buffer to the file when the owner says so. One RecordWriter per open log file; the WAL and the
 * manifest both use it.
 *
 * Ownership: the RecordWriter owns its file descriptor; `close()` writes what is pending and closes it.
 */
import { closeSync, fdatasync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { crc32c, maskCrc } from '../base/crc32c.js';
import { ioError } from '../base/errors.js';
import { BLOCK_SIZE, HEADER_SIZE, RecordType } from './record-format.js';

export class RecordWriter {
  readonly path: string;
  private fd: number;
  /** Offset inside the current 32 KiB block of the next byte to be appended. */
  private blockOffset = 0;
  /** Bytes appended but not yet written to the file. */
  private pending: Buffer;
  private pendingLength = 0;
  /** Bytes written to the file so far (the file's size, if nobody else writes it). */
  private written = 0;

  /**
   * Creates (truncating) the file at `path`; or, given `appendAt`, opens the log at `path` to append to it, `appendAt`
   * being its size (a log that ends with a whole record, as RecordReader's `validLength` tells). Throws EngineError
   * HEAPLESS_ERR_ENGINE_IO if it cannot be opened.
   */
  constructor(path: string, initialBuffer = 64 * 1024, appendAt?: number) {
    this.path = path;
    try {
      this.fd = openSync(path, appendAt === undefined ? 'w' : 'a');
    } catch (err) {
      throw ioError(appendAt === undefined ? 'creating' : 'opening', path, err);
    }
    if (appendAt !== undefined) {
      this.written = appendAt;
      this.blockOffset = appendAt % BLOCK_SIZE;
    }
    this.pending = Buffer.allocUnsafe(initialBuffer);
  }

  /** Bytes appended and not yet handed to write(2). */
  get pendingBytes(): number {
    return this.pendingLength;
  }

  /** Size of the log as the reader will see it once pending bytes are written. */
  get size(): number {
    return this.written + this.pendingLength;
  }

  /**
   * Appends one logical record made of `src[start, end)`, fragmenting it across blocks. Nothing reaches the file
   * until `writePending()`.
   */
  addRecord(src: Uint8Array, start: number, end: number): void {
    // Worst case: every block boundary costs a header, and a trailer of up to HEADER_SIZE - 1 zero bytes.
    const len = end - start;
    this.reserve(len + HEADER_SIZE * (2 + Math.ceil(len / (BLOCK_SIZE - HEADER_SIZE))));
    let begin = true;
    do {
      let leftover = BLOCK_SIZE - this.blockOffset;
      if (leftover < HEADER_SIZE) {
        // Too small for a header: fill the block's end with zeros, as readers expect.
        this.pending.fill(0, this.pendingLength, this.pendingLength + leftover);
        this.pendingLength += leftover;
        this.blockOffset = 0;
        leftover = BLOCK_SIZE;
      }
      const avail = leftover - HEADER_SIZE;
      const fragment = Math.min(avail, end - start);
      const last = start + fragment === end;
      const type =
        begin && last ? RecordType.Full : begin ? RecordType.First : last ? RecordType.Last : RecordType.Middle;
      this.emit(type, src, start, fragment);
      start += fragment;
      begin = false;
    } while (start < end);
  }

  // Fragment layout: masked crc32c(type ++ payload) u32le | payload length u16le | type u8 | payload.
  private emit(type: RecordType, src: Uint8Array, start: number, length: number): void {
    const buf = this.pending;
    const at = this.pendingLength;
    buf[at + 4] = length & 0xff;
    buf[at + 5] = length >>> 8;
    buf[at + 6] = type;
    buf.set(src.subarray(start, start + length), at + HEADER_SIZE);
    const crc = crc32c(buf.subarray(at + 6, at + HEADER_SIZE + length));
    buf.writeUInt32LE(maskCrc(crc), at);
    this.pendingLength = at + HEADER_SIZE + length;
    this.blockOffset += HEADER_SIZE + length;
  }

  private reserve(n: number): void {
    if (this.pendingLength + n <= this.pending.length) return;
    let size = this.pending.length * 2;
    while (size < this.pendingLength + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.pending.copy(grown, 0, 0, this.pendingLength);
    this.pending = grown;
  }

  /**
   * Hands every pending byte to write(2) (synchronously: a write to the page cache, no threadpool hop).
   * Throws EngineError HEAPLESS_ERR_ENGINE_IO.
   */
  writePending(): void {
    let off = 0;
    try {
      while (off < this.pendingLength) off += writeSync(this.fd, this.pending, off, this.pendingLength - off);
    } catch (err) {
      // Keep what was not written so that nothing is silently lost; the caller stops accepting writes.
      this.pending.copy(this.pending, 0, off, this.pendingLength);
      this.pendingLength -= off;
      this.written += off;
      throw ioError('writing', this.path, err);
    }
    this.written += off;
    this.pendingLength = 0;
  }

  /** fdatasync on the libuv threadpool; resolves once what was written before the call is durable. */
  sync(): Promise<void> {
    return new Promise((resolve, reject) => {
      fdatasync(this.fd, (err) => (err ? reject(ioError('syncing', this.path, err)) : resolve()));
    });
  }

  /** Blocking fdatasync, for rare writes (manifest edits, open, close). */
  syncNow(): void {
    try {
      fdatasyncSync(this.fd);
    } catch (err) {
      throw ioError('syncing', this.path, err);
    }
  }

  /** Writes what is pending and closes the file. Idempotent. */
  close(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    try {
      if (this.pendingLength > 0) this.writePending();
    } finally {
      this.fd = -1;
      closeSync(fd);
    }
  }
}
