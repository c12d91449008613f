import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32c, unmaskCrc } from '../base/crc32c.js';
import { CorruptionError, EngineError, ErrorCodes } from '../base/errors.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import {
  compareBytesAt,
  compareInternalAt,
  MAX_SEQUENCE,
  SEEK_KIND,
  sequenceOf,
  TRAILER_SIZE,
  ValueKind,
  writeTrailer,
} from '../base/internal-key.js';
import { Block, BlockIterator, readU32LE } from './block.js';
import type { BlockCache } from './block-cache.js';
import { BloomFilter, bloomHash } from './bloom.js';
import { CompressionType, compressionName, decompressBlock } from './compression.js';
import {
  BLOCK_TRAILER_SIZE,
  FILTER_META_KEY,
  FOOTER_SIZE,
  PROPERTIES_META_KEY,
  TABLE_FORMAT_VERSION,
  TABLE_MAGIC,
} from './table-builder.js';

// Bytes read from the end of a table at open, in one read: the footer and, usually, the index, metaindex, filter and
// properties blocks before it (about 2% of a table of 100-byte entries: 44 KiB of a 2 MiB table). When they turn out
// to start earlier, one more read fetches them.
const TAIL_READ_BYTES = 64 * 1024;

/**
 * What `TableReader.get` returns for a user key that the table holds as a deletion (a tombstone). Compare with `===`.
 */
export const DELETED: unique symbol = Symbol('heapless.deleted');

/**
 * Result of {@link TableReader.get}:
 * - a `Uint8Array`: the newest visible entry is a value; the array is a read-only view into an immutable decoded
 *   block (no copy), valid for as long as the caller holds it. Do not write to it.
 * - {@link DELETED}: the newest visible entry is a deletion; the key is deleted as of that sequence.
 * - `undefined`: the table has no entry for the key at or below the sequence; look in older tables.
 *
 * A hit allocates only the value view; a miss through the bloom filter allocates nothing.
 */
export type GetResult = Uint8Array | typeof DELETED | undefined;

/** Options of {@link TableReader.open}. */
export interface TableReaderOptions {
  /** Identifies the file in the block cache. Must be unique among the files sharing `cache`. */
  fileNumber: number;
  /** Shared cache of decoded data blocks; without one, every data block read goes to the file. */
  cache?: BlockCache;
  /** Check the CRC32C of every data block read. Default true. (Footer, index, filter and metaindex always are.) */
  verifyChecksums?: boolean;
}

/** Options of {@link TableReader.iterator}. */
export interface TableIteratorOptions {
  /**
   * Put the data blocks this iterator reads from the file into the block cache. Default true. Pass false for
   * one-pass scans and compaction, so that they do not evict the blocks point reads are using.
   */
  fillCache?: boolean;
}

/** What the table's properties block records. */
export interface TableProperties {
  entries: number;
  deletions: number;
  dataBlocks: number;
  /** Bytes of the data blocks, with their trailers. */
  dataSize: number;
  indexSize: number;
  filterSize: number;
  /** Sum of the internal keys' and of the values' lengths, before prefix compression and block compression. */
  rawKeySize: number;
  rawValueSize: number;
  /** Smallest and largest internal keys; empty in an empty table. */
  smallest: Uint8Array;
  largest: Uint8Array;
  minSequence: number;
  maxSequence: number;
  bloomBitsPerKey: number;
  restartInterval: number;
  compression: string;
  /** Milliseconds since the epoch when the table was written. */
  creationTime: number;
}

/**
 * Reads one SSTable. `open` reads and checks the footer, index, metaindex, filter and properties (usually in one read
 * of the file's tail) and keeps them in memory; data blocks are read on demand through the shared BlockCache. All I/O
 * is synchronous.
 *
 * Corruption anywhere (bad magic, checksum, handle or entry) throws CorruptionError naming the file and offset; wrong
 * data is never returned.
 *
 * Lifetime: the reader owns a file descriptor until `close()`. Iterators pin the reader: `close()` while iterators are
 * open marks it closing, and the descriptor closes when the last iterator does. `get` on a closed reader throws
 * EngineError CLOSED. Not reentrant across threads (no reader is shared between threads).
 */
export class TableReader {
  readonly path: string;
  readonly fileNumber: number;
  readonly fileSize: number;
  readonly properties: TableProperties;
  private fd: number;
  private readonly cache: BlockCache | undefined;
  private readonly verifyChecksums: boolean;
  private readonly indexBlock: Block;
  private readonly filter: BloomFilter | null;
  /** Where the data blocks end: offsets at or past it are not data. */
  private readonly dataEnd: number;
  /**
   * The index block decoded once, for point gets: separator i is `indexKeys[indexKeyStarts[i]..indexKeyStarts[i+1])`
   * and its data block is (blockOffsets[i], blockSizes[i]). A get then binary-searches flat arrays instead of decoding
   * index entries and handles on every probe.
   */
  private readonly indexKeys: Uint8Array;
  private readonly indexKeyStarts: Uint32Array;
  private readonly blockOffsets: Float64Array;
  private readonly blockSizes: Float64Array;
  // Scratch for point gets, owned by this reader.
  private readonly getIndexIter: BlockIterator;
  private readonly getDataIter: BlockIterator;
  private seekKey: Uint8Array = new Uint8Array(64);
  /** Handle decoded by decodeHandle(). */
  private hOffset = 0;
  private hSize = 0;
  private pins = 0;
  private closing = false;

  private constructor(
    path: string,
    fd: number,
    fileSize: number,
    options: TableReaderOptions,
    index: Block,
    filter: BloomFilter | null,
    properties: TableProperties,
  ) {
    this.path = path;
    this.fd = fd;
    this.fileSize = fileSize;
    this.fileNumber = options.fileNumber;
    this.cache = options.cache;
    this.verifyChecksums = options.verifyChecksums ?? true;
    this.indexBlock = index;
    this.filter = filter;
    this.properties = properties;
    this.dataEnd = properties.dataSize;
    this.getIndexIter = new BlockIterator(index);
    this.getDataIter = new BlockIterator();
    // Flatten the index (its handles are checked here, so a bad one fails the open): one pass sizes the arrays, one
    // fills them. Nothing is allocated per entry: keys are copied byte by byte, not through subarray views.
    const it = this.getIndexIter;
    let n = 0;
    let keyBytes = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      n++;
      keyBytes += it.keyLength();
    }
    const keys = new Uint8Array(keyBytes);
    const starts = new Uint32Array(n + 1);
    this.blockOffsets = new Float64Array(n);
    this.blockSizes = new Float64Array(n);
    let i = 0;
    let at = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      this.decodeHandle(it);
      this.blockOffsets[i] = this.hOffset;
      this.blockSizes[i] = this.hSize;
      const kl = it.keyLength();
      const kb = it.keyBuffer();
      for (let j = 0; j < kl; j++) keys[at + j] = kb[j]!;
      starts[i++] = at;
      at += kl;
    }
    starts[n] = at;
    this.indexKeys = keys;
    this.indexKeyStarts = starts;
  }

  /**
   * Opens the table at `path`. Throws CorruptionError if there is no such file (a table is opened because the
   * manifest lists it) or if its footer, index, metaindex, filter or properties are bad, EngineError IO if it cannot
   * be read. The caller must `close()` the reader.
   */
  static open(path: string, options: TableReaderOptions): TableReader {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new CorruptionError(path, 0, 'the table is missing: the manifest lists a file the directory lacks');
      }
      throw new EngineError(ErrorCodes.IO, `cannot open table ${path}: ${(cause as Error).message}`, { cause });
    }
    try {
      const fileSize = fstatSync(fd).size;
      if (fileSize < FOOTER_SIZE) {
        throw new CorruptionError(path, 0, `file of ${fileSize} bytes is shorter than the ${FOOTER_SIZE}-byte footer`);
      }
      const footerAt = fileSize - FOOTER_SIZE;
      // The filter, properties, metaindex and index blocks lie just before the footer: one read of the file's tail
      // usually brings them all in with it.
      const tailStart = fileSize - Math.min(fileSize, TAIL_READ_BYTES);
      const tail = readExactly(fd, path, tailStart, fileSize - tailStart);
      const f = footerAt - tailStart;
      for (let i = 0; i < 8; i++) {
        if (tail[f + 32 + i] !== TABLE_MAGIC[i])
          throw new CorruptionError(path, footerAt + 32, 'bad table magic number');
      }
      if (unmaskCrc(readU32LE(tail, f + 28)) !== crc32c(tail.subarray(f, f + 28))) {
        throw new CorruptionError(path, footerAt, 'footer checksum mismatch');
      }
      const version = readU32LE(tail, f + 24);
      if (version !== TABLE_FORMAT_VERSION) {
        throw new CorruptionError(path, footerAt + 24, `unknown table format version ${version}`);
      }
      const metaOffset = readU32LE(tail, f) + readU32LE(tail, f + 4) * 0x1_0000_0000;
      const metaSize = readU32LE(tail, f + 8);
      const indexOffset = readU32LE(tail, f + 12) + readU32LE(tail, f + 16) * 0x1_0000_0000;
      const indexSize = readU32LE(tail, f + 20);

      const meta = new Block(
        metaOffset >= tailStart
          ? blockContentsAt(tail, tailStart, path, metaOffset, metaSize, footerAt, true)
          : readBlockContents(fd, path, metaOffset, metaSize, footerAt, true),
        path,
        metaOffset,
      );
      let filterOffset = -1;
      let filterSize = 0;
      let propsOffset = -1;
      let propsSize = 0;
      const it = new BlockIterator(meta);
      const pos = new Int32Array(1);
      for (it.seekToFirst(); it.valid(); it.next()) {
        const name = Buffer.from(it.key()).toString('latin1');
        const v = it.value();
        pos[0] = 0;
        const off = getVarint64(v, pos, v.length);
        const size = getVarint64(v, pos, v.length);
        if (off < 0 || size < 0)
          throw new CorruptionError(path, metaOffset, `bad block handle for ${name} in metaindex`);
        if (name === FILTER_META_KEY) {
          filterOffset = off;
          filterSize = size;
        } else if (name === PROPERTIES_META_KEY) {
          propsOffset = off;
          propsSize = size;
        }
      }
      if (propsOffset < 0) throw new CorruptionError(path, metaOffset, 'metaindex has no properties block');

      // The blocks the reader keeps (index, filter) are views into one buffer: the tail when it holds them all and
      // little else, else a copy or read of just [first of them, footer).
      let start = Math.min(indexOffset, propsOffset);
      if (filterOffset >= 0) start = Math.min(start, filterOffset);
      let region: Uint8Array = tail;
      let regionStart = tailStart;
      if (start < tailStart) {
        region = readExactly(fd, path, start, footerAt - start);
        regionStart = start;
      } else if (start - tailStart > (fileSize - tailStart) / 4) {
        region = tail.slice(start - tailStart, f);
        regionStart = start;
      }
      const index = new Block(
        blockContentsAt(region, regionStart, path, indexOffset, indexSize, footerAt, true),
        path,
        indexOffset,
      );
      const filter =
        filterOffset < 0
          ? null
          : new BloomFilter(blockContentsAt(region, regionStart, path, filterOffset, filterSize, footerAt, true));
      const props = parseProperties(
        new Block(
          blockContentsAt(region, regionStart, path, propsOffset, propsSize, footerAt, true),
          path,
          propsOffset,
        ),
      );
      if (props.dataSize > footerAt) throw new CorruptionError(path, metaOffset, 'data size property past the footer');
      return new TableReader(path, fd, fileSize, options, index, filter, props);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /**
   * The newest entry for `userKey` whose sequence is <= `seq` (see {@link GetResult}). Checks the bloom filter first:
   * a key the table certainly lacks costs one hash (none when the caller passes `hash`, the key's bloomHash) and a
   * few bit probes. Throws CorruptionError, or EngineError CLOSED after `close()`.
   */
  get(userKey: Uint8Array, seq: number, hash?: number): GetResult {
    if (this.fd < 0) this.throwClosed();
    const ulen = userKey.length;
    if (this.filter !== null && !this.filter.mayContainHash(hash ?? bloomHash(userKey, 0, ulen))) return undefined;
    const klen = ulen + TRAILER_SIZE;
    if (this.seekKey.length < klen) this.seekKey = new Uint8Array(klen * 2);
    const target = this.seekKey;
    if (ulen < 32) for (let i = 0; i < ulen; i++) target[i] = userKey[i]!;
    else target.set(userKey);
    writeTrailer(target, ulen, Math.min(seq, MAX_SEQUENCE), SEEK_KIND);

    // The first block whose separator is >= target holds the answer if any block does; the loop only moves on when
    // the target falls between a block's last key and its separator.
    const keys = this.indexKeys;
    const starts = this.indexKeyStarts;
    const n = this.blockOffsets.length;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const ks = starts[mid]!;
      if (compareInternalAt(keys, ks, starts[mid + 1]! - ks, target, 0, klen) < 0) lo = mid + 1;
      else hi = mid;
    }
    const data = this.getDataIter;
    for (let i = lo; i < n; i++) {
      const block = this.blockAt(this.blockOffsets[i]!, this.blockSizes[i]!);
      data.reset(block);
      data.seekAt(target, 0, klen);
      if (data.valid()) {
        const kb = data.keyBuffer();
        const kl = data.keyLength();
        if (kl - TRAILER_SIZE !== ulen || compareBytesAt(kb, 0, ulen, userKey, 0, ulen) !== 0) return undefined;
        const kind = kb[kl - 1];
        if (kind === ValueKind.Value) {
          const at = data.valueOffsetInBlock();
          return block.data.subarray(at, at + data.valueLength());
        }
        if (kind === ValueKind.Deletion) return DELETED;
        throw new CorruptionError(this.path, block.fileOffset, `unknown value kind ${kind}`);
      }
    }
    return undefined;
  }

  /** False only if the table certainly holds no entry for `userKey` (bloom filter; true when there is none). */
  mayContain(userKey: Uint8Array): boolean {
    return this.filter === null || this.filter.mayContainAt(userKey, 0, userKey.length);
  }

  /** False only if the table certainly lacks the key whose {@link bloomHash} is `hash`. */
  mayContainHash(hash: number): boolean {
    return this.filter === null || this.filter.mayContainHash(hash);
  }

  /**
   * A new two-level cursor over the whole table, in internal-key order, both directions. It pins this reader until
   * its `close()`, which the caller must call.
   */
  iterator(options: TableIteratorOptions = {}): InternalIterator {
    if (this.fd < 0 || this.closing) this.throwClosed();
    this.pins++;
    return new TableIterator(this, options.fillCache ?? true);
  }

  /**
   * Approximate byte offset in the file where entries >= `ikey` begin: the offset of the data block that would hold
   * it, or the end of the data when `ikey` is past every key. For size estimates of key ranges.
   */
  approximateOffsetOf(ikey: Uint8Array): number {
    if (this.fd < 0) this.throwClosed();
    const index = this.getIndexIter;
    index.seek(ikey);
    if (!index.valid()) return this.dataEnd;
    this.decodeHandle(index);
    return this.hOffset;
  }

  /**
   * Closes the file descriptor, or, while iterators are open, marks the reader closing so that the last iterator's
   * `close()` closes it. Idempotent.
   */
  close(): void {
    this.closing = true;
    if (this.pins === 0) this.closeFd();
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.closing;
  }

  /** Open iterators pinning this reader. */
  get pinCount(): number {
    return this.pins;
  }

  /**
   * A readable listing for tests and debugging: the properties, one line per index entry (separator, handle) and,
   * with `entries`, one line per entry (`user key hex @seq kind = value hex`). Reads every block: not for hot paths.
   */
  debugDump(options: { entries?: boolean } = {}): string {
    const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
    const ikey = (k: Uint8Array) =>
      `${hex(k.subarray(0, k.length - TRAILER_SIZE))}@${sequenceOf(k)}${k[k.length - 1] === ValueKind.Deletion ? ' del' : ''}`;
    const p = this.properties;
    const lines = [
      `table ${this.path} (file ${this.fileNumber}): ${p.entries} entries (${p.deletions} deletions) in ${p.dataBlocks} blocks, ` +
        `${this.fileSize} bytes, compression ${p.compression}, filter ${p.filterSize} bytes`,
    ];
    const index = this.indexIterator();
    for (index.seekToFirst(); index.valid(); index.next()) {
      this.decodeHandle(index);
      lines.push(`index ${ikey(index.key())} -> block @${this.hOffset}+${this.hSize}`);
    }
    if (options.entries) {
      const it = this.iterator();
      try {
        for (it.seekToFirst(); it.valid(); it.next()) lines.push(`  ${ikey(it.key())} = ${hex(it.value())}`);
      } finally {
        it.close();
      }
    }
    return lines.join('\n');
  }

  /** @internal Called by TableIterator.close(). */
  unpin(): void {
    this.pins--;
    if (this.pins === 0 && this.closing) this.closeFd();
  }

  /** @internal A fresh cursor over the index block. */
  indexIterator(): BlockIterator {
    return new BlockIterator(this.indexBlock);
  }

  /** @internal Decodes the handle in the index cursor's value into hOffset/hSize and checks its range. */
  decodeHandle(index: BlockIterator): void {
    const block = index.currentBlock();
    const d = block.data;
    let p = index.valueOffsetInBlock();
    const end = p + index.valueLength();
    let off = 0;
    let size = 0;
    let mul = 1;
    for (;;) {
      if (p >= end || mul > 2 ** 49) this.corruptIndex(index);
      const b = d[p++]!;
      off += (b & 0x7f) * mul;
      if (b < 0x80) break;
      mul *= 128;
    }
    mul = 1;
    for (;;) {
      if (p >= end || mul > 2 ** 49) this.corruptIndex(index);
      const b = d[p++]!;
      size += (b & 0x7f) * mul;
      if (b < 0x80) break;
      mul *= 128;
    }
    if (off + size + BLOCK_TRAILER_SIZE > this.dataEnd) this.corruptIndex(index);
    this.hOffset = off;
    this.hSize = size;
  }

  /** @internal Offset decoded by the last decodeHandle(). */
  handleOffset(): number {
    return this.hOffset;
  }

  /** @internal Size decoded by the last decodeHandle(). */
  handleSize(): number {
    return this.hSize;
  }

  /** @internal The data block at (offset, size), from the cache or the file (then cached if `fillCache`). */
  blockAt(offset: number, size: number, fillCache = true): Block {
    const cache = this.cache;
    if (cache !== undefined) {
      const hit = cache.get(this.fileNumber, offset);
      if (hit !== undefined) return hit;
    }
    if (this.fd < 0) this.throwClosed();
    const block = new Block(
      readBlockContents(this.fd, this.path, offset, size, this.dataEnd, this.verifyChecksums),
      this.path,
      offset,
    );
    if (fillCache) cache?.insert(this.fileNumber, offset, block);
    return block;
  }

  /** @internal The cached block at `offset`, if any. */
  cachedBlock(offset: number): Block | undefined {
    return this.cache?.get(this.fileNumber, offset);
  }

  /** @internal Reads up to `length` bytes of data blocks from `offset` in one call: a readahead window. */
  readWindow(offset: number, length: number): Uint8Array {
    if (this.fd < 0) this.throwClosed();
    const n = Math.min(length, this.dataEnd - offset);
    const buf = readExactly(this.fd, this.path, offset, n);
    return new Uint8Array(buf.buffer, buf.byteOffset, n);
  }

  /**
   * @internal The block at (offset, size) out of a readahead window that starts at file offset `windowStart`. Cached
   * as a copy when `fillCache`, so that a cached block never keeps a whole window alive.
   */
  blockFromWindow(window: Uint8Array, windowStart: number, offset: number, size: number, fillCache: boolean): Block {
    const at = offset - windowStart;
    const contents = decodeBlock(window, at, this.path, offset, size, this.verifyChecksums);
    if (fillCache && this.cache !== undefined) {
      const block = new Block(contents.buffer === window.buffer ? contents.slice() : contents, this.path, offset);
      this.cache.insert(this.fileNumber, offset, block);
      return block;
    }
    return new Block(contents, this.path, offset);
  }

  private corruptIndex(index: BlockIterator): never {
    throw new CorruptionError(
      this.path,
      index.currentBlock().fileOffset + index.valueOffsetInBlock(),
      'bad data block handle in index',
    );
  }

  private closeFd(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    closeSync(fd);
  }

  private throwClosed(): never {
    throw new EngineError(ErrorCodes.CLOSED, `table ${this.path} is closed`);
  }
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
class TableIterator implements InternalIterator {
  private readonly reader: TableReader;
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

  constructor(reader: TableReader, fillCache: boolean) {
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
    if (this.closed) throw new EngineError(ErrorCodes.CLOSED, `iterator over ${this.reader.path} is closed`);
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

/** Reads `length` bytes at `offset`; throws CorruptionError if the file ends first, EngineError IO on a read error. */
function readExactly(fd: number, path: string, offset: number, length: number): Buffer {
  const buf = Buffer.allocUnsafeSlow(length);
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = readSync(fd, buf, done, length - done, offset + done);
    } catch (cause) {
      throw new EngineError(ErrorCodes.IO, `cannot read ${path} at offset ${offset + done}`, { cause });
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
function blockContentsAt(
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
function readBlockContents(
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
function decodeBlock(
  buf: Uint8Array,
  at: number,
  path: string,
  offset: number,
  size: number,
  verify: boolean,
): Uint8Array {
  const type = buf[at + size]!;
  if (verify && unmaskCrc(readU32LE(buf, at + size + 1)) !== crc32c(buf.subarray(at, at + size + 1))) {
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

/** Reads a varint of up to 2^53 at `buf[pos[0]]`; -1 if it is malformed or runs past `limit`. */
function getVarint64(buf: Uint8Array, pos: Int32Array, limit: number): number {
  let at = pos[0]!;
  let v = 0;
  let mul = 1;
  while (at < limit && mul <= 2 ** 49) {
    const b = buf[at++]!;
    v += (b & 0x7f) * mul;
    if (b < 0x80) {
      pos[0] = at;
      return v;
    }
    mul *= 128;
  }
  return -1;
}

function parseProperties(block: Block): TableProperties {
  const p: TableProperties = {
    entries: 0,
    deletions: 0,
    dataBlocks: 0,
    dataSize: 0,
    indexSize: 0,
    filterSize: 0,
    rawKeySize: 0,
    rawValueSize: 0,
    smallest: new Uint8Array(0),
    largest: new Uint8Array(0),
    minSequence: 0,
    maxSequence: 0,
    bloomBitsPerKey: 0,
    restartInterval: 0,
    compression: 'none',
    creationTime: 0,
  };
  const numeric: Record<string, keyof TableProperties> = {
    'bloom.bits.per.key': 'bloomBitsPerKey',
    'creation.time': 'creationTime',
    'data.blocks': 'dataBlocks',
    'data.size': 'dataSize',
    deletions: 'deletions',
    entries: 'entries',
    'filter.size': 'filterSize',
    'index.size': 'indexSize',
    'max.sequence': 'maxSequence',
    'min.sequence': 'minSequence',
    'raw.key.size': 'rawKeySize',
    'raw.value.size': 'rawValueSize',
    'restart.interval': 'restartInterval',
  };
  const it = new BlockIterator(block);
  const pos = new Int32Array(1);
  for (it.seekToFirst(); it.valid(); it.next()) {
    const name = Buffer.from(it.key()).toString('latin1');
    const v = it.value();
    const field = numeric[name];
    if (field !== undefined) {
      pos[0] = 0;
      const n = getVarint64(v, pos, v.length);
      if (n < 0) throw new CorruptionError(block.file, block.fileOffset, `bad value of property ${name}`);
      (p as unknown as Record<string, number>)[field] = n;
    } else if (name === 'smallest') p.smallest = v.slice();
    else if (name === 'largest') p.largest = v.slice();
    else if (name === 'compression') p.compression = Buffer.from(v).toString('latin1');
  }
  return p;
}
