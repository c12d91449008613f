/**
 * The cursor over a whole table (TableReader.iterator), in internal-key order, both directions.
 */
import { closedError } from '../base/errors.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import type { Block } from './block.js';
import { BlockIterator } from './block-iterator.js';
import { BLOCK_TRAILER_SIZE } from './table-format.js';

/**
 * What the cursor asks of its table (table-reader.ts, the one implementation), named here so that the reader can make
 * its cursors without this file importing it back. The handle calls share the reader's scratch: one cursor moves at a
 * time on the event loop.
 */
export interface TableBlocks {
  readonly path: string;
  /** Ends the pin an open cursor holds on the file's descriptor. */
  unpin(): void;
  /** A fresh cursor over the index block. */
  indexIterator(): BlockIterator;
  /** Decodes the block handle in the index cursor's value, for `handleOffset` and `handleSize`. */
  decodeHandle(index: BlockIterator): void;
  handleOffset(): number;
  handleSize(): number;
  /** The data block at (offset, size), from the cache or the file (then cached if `fillCache`). */
  blockAt(offset: number, size: number, fillCache?: boolean): Block;
  /** The cached block at `offset`, if any. */
  cachedBlock(offset: number): Block | undefined;
  /** Up to `length` bytes of data blocks from `offset`, read in one call: a readahead window. */
  readWindow(offset: number, length: number): Uint8Array;
  /** The block at (offset, size) out of a readahead window that starts at file offset `windowStart`. */
  blockFromWindow(window: Uint8Array, windowStart: number, offset: number, size: number, fillCache: boolean): Block;
}

// A forward scan that has read this many blocks back to back from the file switches to readahead.
const SEQUENTIAL_READS_FOR_READAHEAD = 2;
// The first window of an iterator: a few blocks. A short scan (a page of a hundred entries, read by an iterator of
// its own) then reads about what it uses rather than a whole 256 KiB window per page.
const INITIAL_READAHEAD_BYTES = 16 * 1024;
// Each further window doubles, up to this: one read of 256 KiB replaces ~64 reads of 4 KiB blocks (RocksDB's
// automatic readahead grows the same way, 8 KiB to 256 KiB).
const READAHEAD_BYTES = 256 * 1024;

/**
 * Two-level cursor: a cursor over the index block chooses the data block, a second cursor walks inside it. The data
 * cursor is re-pointed from block to block, so iteration allocates only when a block is read from the file.
 *
 * A forward scan that keeps missing the cache reads ahead: one read serves the next blocks, each still checked by its
 * own CRC; windows start at 16 KiB and double up to 256 KiB. A window is never reused, so views into it stay valid
 * like any block's.
 */
export class TableIterator implements InternalIterator {
  private readonly reader: TableBlocks;
  private readonly fillCache: boolean;
  private readonly index: BlockIterator;
  private readonly data: BlockIterator;
  /** File offset of the block `data` is on, or -1 when it is on none. */
  private dataOffset = -1;
  /** File offset just past the last block read from the file (not the cache), and how many such reads in a row. */
  private lastReadEnd = -1;
  private sequentialReads = 0;
  private window: Uint8Array | null = null;
  private windowStart = 0;
  /** Bytes of the next readahead window. */
  private readahead = INITIAL_READAHEAD_BYTES;
  private closed = false;

  constructor(reader: TableBlocks, fillCache: boolean) {
    this.reader = reader;
    this.fillCache = fillCache;
    this.index = reader.indexIterator();
    this.data = new BlockIterator();
  }

  valid(): boolean {
    return this.dataOffset >= 0 && this.data.valid();
  }

  seekToFirst(): void {
    this.index.seekToFirst();
    if (this.loadBlock()) this.data.seekToFirst();
    this.skipForward();
  }

  seekToLast(): void {
    this.index.seekToLast();
    if (this.loadBlock()) this.data.seekToLast();
    this.skipBackward();
  }

  seek(target: Uint8Array): void {
    this.index.seek(target);
    if (this.loadBlock()) this.data.seek(target);
    this.skipForward();
  }

  next(): void {
    this.data.next();
    this.skipForward();
  }

  prev(): void {
    this.data.prev();
    this.skipBackward();
  }

  key(): Uint8Array {
    return this.data.key();
  }

  value(): Uint8Array {
    return this.data.value();
  }

  valueLength(): number {
    return this.data.valueLength();
  }

  valueBuffer(): Uint8Array {
    return this.data.valueBuffer();
  }

  valueOffset(): number {
    return this.data.valueOffset();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dataOffset = -1;
    this.window = null;
    this.reader.unpin();
  }

  /** Points `data` at the block the index cursor is on; false when the index cursor is not valid. */
  private loadBlock(): boolean {
    if (!this.index.valid()) {
      this.dataOffset = -1;
      return false;
    }
    if (this.closed) throw closedError(`iterator over ${this.reader.path}`);
    const reader = this.reader;
    reader.decodeHandle(this.index);
    const offset = reader.handleOffset();
    if (offset !== this.dataOffset || !this.data.valid()) {
      this.data.reset(this.fetch(offset, reader.handleSize()));
      this.dataOffset = offset;
    }
    return true;
  }

  /** The block at (offset, size): from the cache, the readahead window, or one read. */
  private fetch(offset: number, size: number): Block {
    const reader = this.reader;
    const cached = reader.cachedBlock(offset);
    if (cached !== undefined) return cached;
    const end = offset + size + BLOCK_TRAILER_SIZE;
    this.sequentialReads = offset === this.lastReadEnd ? this.sequentialReads + 1 : 0;
    this.lastReadEnd = end;
    const w = this.window;
    if (w !== null && offset >= this.windowStart && end <= this.windowStart + w.length) {
      return reader.blockFromWindow(w, this.windowStart, offset, size, this.fillCache);
    }
    if (this.sequentialReads >= SEQUENTIAL_READS_FOR_READAHEAD) {
      const next = reader.readWindow(offset, Math.max(this.readahead, end - offset));
      this.readahead = Math.min(READAHEAD_BYTES, this.readahead * 2);
      this.window = next;
      this.windowStart = offset;
      return reader.blockFromWindow(next, offset, offset, size, this.fillCache);
    }
    this.window = null;
    return reader.blockAt(offset, size, this.fillCache);
  }

  private skipForward(): void {
    while (this.dataOffset >= 0 && !this.data.valid()) {
      this.index.next();
      if (this.loadBlock()) this.data.seekToFirst();
    }
  }

  private skipBackward(): void {
    while (this.dataOffset >= 0 && !this.data.valid()) {
      this.index.prev();
      if (this.loadBlock()) this.data.seekToLast();
    }
  }
}
