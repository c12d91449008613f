import { closeSync, fstatSync, openSync } from 'node:fs';
import { CorruptionError, closedError, ioError } from '../base/errors.js';
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
import { Block } from './block.js';
import type { BlockCache } from './block-cache.js';
import { decodeBlock, readBlockContents, readExactly } from './block-io.js';
import { BlockIterator } from './block-iterator.js';
import { type BloomFilter, bloomHash } from './bloom.js';
import { BLOCK_TRAILER_SIZE, BlockHandle, decodeBlockHandle } from './table-format.js';
import { TableIterator } from './table-iterator.js';
import type { TableProperties } from './table-properties.js';
import { readTableTail } from './table-tail.js';

/**
 * Point gets a reader answers by seeking its index block before it decodes the index into flat arrays: enough that a
 * reader opened for a get or two skips the pass over every index entry (a 2 MiB table's ~500), few enough that a
 * long-lived one soon searches the arrays.
 */
const FLATTEN_INDEX_AFTER = 8;

/** `getInBlock`'s answer when the key is past the block's last entry. */
const NOT_IN_BLOCK: unique symbol = Symbol('heapless.not-in-block');

/** The index block as flat arrays (see `TableReader.flatIndex`). */
interface FlatIndex {
  keys: Uint8Array;
  starts: Uint32Array;
  offsets: Float64Array;
  sizes: Float64Array;
}

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
  /** Where point gets count their bloom filter outcomes; shared by the readers of one table cache. Default: its own. */
  filterCounters?: FilterCounters;
}

/** Bloom filter outcomes of point gets (RocksDB's bloom.filter.useful and checked), for `engine.stats()`. */
export interface FilterCounters {
  /** Gets that asked a table's filter. */
  checked: number;
  /** Gets the filter answered "certainly absent", sparing a block read. */
  useful: number;
}

/** Options of {@link TableReader.iterator}. */
export interface TableIteratorOptions {
  /**
   * Put the data blocks this iterator reads from the file into the block cache. Default true. Pass false for
   * one-pass scans and compaction, so that they do not evict the blocks point reads are using.
   */
  fillCache?: boolean;
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
  private readonly filterCounters: FilterCounters;
  /** Where the data blocks end: offsets at or past it are not data. */
  private readonly dataEnd: number;
  /**
   * The index block decoded once, for point gets, after {@link FLATTEN_INDEX_AFTER} of them: separator i is
   * `keys[starts[i]..starts[i+1])` and its data block is (offsets[i], sizes[i]). A get then binary-searches flat
   * arrays instead of decoding index entries and handles on every probe. Until then (undefined) gets seek the index
   * block itself: a reader opened for one get (an open, a get, a close) never pays the pass over every entry.
   */
  private flatIndex: FlatIndex | undefined;
  /** Point gets that reached the index before it was flattened. */
  private indexLookups = 0;
  // Scratch for point gets, owned by this reader.
  private readonly getIndexIter: BlockIterator;
  private readonly getDataIter: BlockIterator;
  private seekKey: Uint8Array = new Uint8Array(64);
  /** Handle decoded by decodeHandle(), and the cursor it decodes with. */
  private readonly handle = new BlockHandle();
  private readonly handlePos = new Int32Array(1);
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
    this.filterCounters = options.filterCounters ?? { checked: 0, useful: 0 };
    this.properties = properties;
    this.dataEnd = properties.dataSize;
    this.getIndexIter = new BlockIterator(index);
    this.getDataIter = new BlockIterator();
  }

  /**
   * Decodes the index into flat arrays (its handles are checked here, so a bad one fails the get that flattens): one
   * pass sizes the arrays, one fills them. Nothing is allocated per entry: keys are copied byte by byte, not through
   * subarray views.
   */
  private flattenIndex(): FlatIndex {
    const it = this.getIndexIter;
    let n = 0;
    let keyBytes = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      n++;
      keyBytes += it.keyLength();
    }
    const keys = new Uint8Array(keyBytes);
    const starts = new Uint32Array(n + 1);
    const offsets = new Float64Array(n);
    const sizes = new Float64Array(n);
    let i = 0;
    let at = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      this.decodeHandle(it);
      offsets[i] = this.handle.offset;
      sizes[i] = this.handle.size;
      const kl = it.keyLength();
      const kb = it.keyBuffer();
      for (let j = 0; j < kl; j++) keys[at + j] = kb[j]!;
      starts[i++] = at;
      at += kl;
    }
    starts[n] = at;
    this.flatIndex = { keys, starts, offsets, sizes };
    return this.flatIndex;
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
      throw ioError('opening table', path, cause);
    }
    try {
      const fileSize = fstatSync(fd).size;
      const { index, filter, properties } = readTableTail(fd, path, fileSize);
      return new TableReader(path, fd, fileSize, options, index, filter, properties);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /**
   * The newest entry for `userKey` whose sequence is <= `seq` (see {@link GetResult}). Checks the bloom filter first:
   * a key the table certainly lacks costs one hash (none when the caller passes `hash`, the key's bloomHash) and a
   * few bit probes. A value is a view into the cached block, or with `copy` a copy of its own (made straight from
   * the block: one allocation). Throws CorruptionError, or EngineError CLOSED after `close()`.
   */
  get(userKey: Uint8Array, seq: number, hash?: number, copy = false): GetResult {
    if (this.fd < 0) this.throwClosed();
    const ulen = userKey.length;
    if (this.filter !== null) {
      const counters = this.filterCounters;
      counters.checked++;
      if (!this.filter.mayContainHash(hash ?? bloomHash(userKey, 0, ulen))) {
        counters.useful++;
        return undefined;
      }
    }
    const klen = ulen + TRAILER_SIZE;
    if (this.seekKey.length < klen) this.seekKey = new Uint8Array(klen * 2);
    const target = this.seekKey;
    if (ulen < 32) for (let i = 0; i < ulen; i++) target[i] = userKey[i]!;
    else target.set(userKey);
    writeTrailer(target, ulen, Math.min(seq, MAX_SEQUENCE), SEEK_KIND);

    // The first block whose separator is >= target holds the answer if any block does; the loop only moves on when
    // the target falls between a block's last key and its separator.
    let flat = this.flatIndex;
    if (flat === undefined) {
      if (++this.indexLookups <= FLATTEN_INDEX_AFTER) {
        const index = this.getIndexIter;
        for (index.seekAt(target, 0, klen); index.valid(); index.next()) {
          this.decodeHandle(index);
          const found = this.getInBlock(this.handle.offset, this.handle.size, target, klen, userKey, copy);
          if (found !== NOT_IN_BLOCK) return found;
        }
        return undefined;
      }
      flat = this.flattenIndex();
    }
    const { keys, starts, offsets, sizes } = flat;
    const n = offsets.length;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const ks = starts[mid]!;
      if (compareInternalAt(keys, ks, starts[mid + 1]! - ks, target, 0, klen) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < n; i++) {
      const found = this.getInBlock(offsets[i]!, sizes[i]!, target, klen, userKey, copy);
      if (found !== NOT_IN_BLOCK) return found;
    }
    return undefined;
  }

  /**
   * `get`'s probe of the data block at `offset` (`size` bytes) for the internal key `target[0..klen)`:
   * {@link NOT_IN_BLOCK} when every key of the block is below it (the answer, if any, is in the next block).
   */
  private getInBlock(
    offset: number,
    size: number,
    target: Uint8Array,
    klen: number,
    userKey: Uint8Array,
    copy: boolean,
  ): GetResult | typeof NOT_IN_BLOCK {
    const data = this.getDataIter;
    const block = this.blockAt(offset, size);
    data.reset(block);
    data.seekAt(target, 0, klen);
    if (!data.valid()) return NOT_IN_BLOCK;
    const ulen = userKey.length;
    const kb = data.keyBuffer();
    const kl = data.keyLength();
    if (kl - TRAILER_SIZE !== ulen || compareBytesAt(kb, 0, ulen, userKey, 0, ulen) !== 0) return undefined;
    const kind = kb[kl - 1];
    if (kind === ValueKind.Value) {
      const at = data.valueOffsetInBlock();
      const end = at + data.valueLength();
      return copy ? block.data.slice(at, end) : block.data.subarray(at, end);
    }
    if (kind === ValueKind.Deletion) return DELETED;
    throw new CorruptionError(this.path, block.fileOffset, `unknown value kind ${kind}`);
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
    return this.handle.offset;
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
   * with `entries`, one line per entry (`user key hex@seq = value hex`, or `user key hex@seq del`). Reads every block: not for hot paths.
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
      lines.push(`index ${ikey(index.key())} -> block @${this.handle.offset}+${this.handle.size}`);
    }
    if (options.entries) {
      const it = this.iterator();
      try {
        for (it.seekToFirst(); it.valid(); it.next()) {
          const k = it.key();
          lines.push(k[k.length - 1] === ValueKind.Deletion ? `  ${ikey(k)}` : `  ${ikey(k)} = ${hex(it.value())}`);
        }
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

  /** @internal Decodes the handle in the index cursor's value (see handleOffset/handleSize) and checks its range. */
  decodeHandle(index: BlockIterator): void {
    const at = index.valueOffsetInBlock();
    const h = this.handle;
    this.handlePos[0] = at;
    if (!decodeBlockHandle(index.currentBlock().data, this.handlePos, at + index.valueLength(), h))
      this.corruptIndex(index);
    if (h.offset + h.size + BLOCK_TRAILER_SIZE > this.dataEnd) this.corruptIndex(index);
  }

  /** @internal Offset decoded by the last decodeHandle(). */
  handleOffset(): number {
    return this.handle.offset;
  }

  /** @internal Size decoded by the last decodeHandle(). */
  handleSize(): number {
    return this.handle.size;
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
    throw closedError(`table ${this.path}`);
  }
}
