import { closeSync, fsyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { closedError, EngineError, invalidArgument, ioError } from '../base/errors.js';
import {
  compareInternalAt,
  MAX_SEQUENCE,
  SEEK_KIND,
  TRAILER_SIZE,
  ValueKind,
  writeTrailer,
} from '../base/internal-key.js';
import type { Compression } from '../base/options.js';
import { BlockBuilder } from './block-builder.js';
import { BloomFilterBuilder } from './bloom.js';
import { type BlockCompressor, blockCompressor, CompressionType, compressionName } from './compression.js';
import {
  BLOCK_TRAILER_SIZE,
  BlockHandle,
  encodeBlockHandle,
  encodeFooter,
  FILTER_META_KEY,
  MAX_BLOCK_HANDLE_LENGTH,
  MAX_TABLE_SIZE,
  PROPERTIES_META_KEY,
  writeBlockTrailer,
} from './table-format.js';
import { encodeProperties } from './table-properties.js';

/**
 * Writes one SSTable (FORMAT.md "SSTable"; the fixed layouts, handles, trailers and footer, are in table-format.ts):
 * data blocks, then the filter, properties, metaindex and index blocks, then the footer.
 *
 * The index block holds, for each data block, a separator key (>= every key of that block, < every key of the next)
 * mapped to the block's handle. The metaindex maps the names below to the filter and properties handles. The footer
 * has a fixed size so a reader finds it by seeking to the end of the file.
 */

/** Options of {@link TableBuilder}. */
export interface TableBuilderOptions {
  /** Target uncompressed size of a data block, in bytes. Default 4096. */
  blockSize?: number;
  /** Entries between restart points in data blocks. Default 16. */
  restartInterval?: number;
  /** Bloom filter bits per user key; 0 writes no filter. Default 10 (about 1% false positives). */
  bloomBitsPerKey?: number;
  /** Block compression (compression.ts); a block is stored compressed only if that saves at least 12.5%. Default 'none'. */
  compression?: Compression;
  /** zstd's level when `compression` is 'zstd'. Default 3. */
  zstdLevel?: number;
}

/** What `finish()` reports about the table it wrote. */
export interface TableMeta {
  /** Bytes in the file. */
  fileSize: number;
  /** Number of entries (values and deletions). */
  entries: number;
  /** Smallest and largest internal keys in the table (copies the caller owns); empty when `entries` is 0. */
  smallest: Uint8Array;
  largest: Uint8Array;
}

// Output is gathered in one reused buffer and written in large chunks.
const OUTPUT_BUFFER_SIZE = 256 * 1024;

/**
 * Builds an SSTable file from entries added in internal-key order. Synchronous I/O: it is meant for flushes and
 * compaction worker threads. The builder owns the file descriptor until `finish()` or `abandon()`; one of them must be
 * called, or the descriptor leaks.
 */
export class TableBuilder {
  readonly path: string;
  private fd: number;
  private readonly blockSize: number;
  private readonly compressor: BlockCompressor | null;
  private readonly bloomBitsPerKey: number;
  private readonly restartInterval: number;
  private readonly dataBlock: BlockBuilder;
  private readonly indexBlock: BlockBuilder;
  private readonly filter: BloomFilterBuilder | null;
  private readonly out: Buffer;
  private outLen = 0;
  /** Bytes handed to the file so far (written or buffered). */
  private offset = 0;
  private lastKey: Uint8Array = new Uint8Array(64);
  private lastKeyLen = 0;
  private smallest: Uint8Array = new Uint8Array(0);
  private pendingIndexEntry = false;
  private pendingOffset = 0;
  private pendingSize = 0;
  private readonly handleScratch = new Uint8Array(MAX_BLOCK_HANDLE_LENGTH);
  private readonly trailerScratch = new Uint8Array(BLOCK_TRAILER_SIZE);
  private separatorScratch: Uint8Array = new Uint8Array(64);
  private state: 'open' | 'finished' | 'abandoned' = 'open';
  /** True once finish() wrote and synced the whole file. */
  private completed = false;
  // Properties.
  private entryCount = 0;
  private deletions = 0;
  private dataBlocks = 0;
  private rawKeySize = 0;
  private rawValueSize = 0;
  private minSequence = MAX_SEQUENCE;
  private maxSequence = 0;

  /**
   * Creates (or truncates) the file at `path`. Throws EngineError INVALID_ARGUMENT for bad options, IO if the file
   * cannot be created.
   */
  constructor(path: string, options: TableBuilderOptions = {}) {
    const blockSize = options.blockSize ?? 4096;
    const restartInterval = options.restartInterval ?? 16;
    const bloomBitsPerKey = options.bloomBitsPerKey ?? 10;
    if (!Number.isInteger(blockSize) || blockSize < 64 || blockSize > 64 * 1024 * 1024) {
      throw invalidArgument(`blockSize must be an integer in [64, 64 MiB], got ${blockSize}`);
    }
    if (!(bloomBitsPerKey >= 0) || bloomBitsPerKey > 1000) {
      throw invalidArgument(`bloomBitsPerKey must be in [0, 1000], got ${bloomBitsPerKey}`);
    }
    // Before the file exists: a codec that cannot be used here fails the build, not the table.
    this.compressor = blockCompressor(options.compression ?? 'none', options.zstdLevel);
    this.path = path;
    this.blockSize = blockSize;
    this.restartInterval = restartInterval;
    this.bloomBitsPerKey = bloomBitsPerKey;
    this.dataBlock = new BlockBuilder(restartInterval, blockSize + 1024);
    // Index entries are few and looked up by binary search: a restart at every entry, as LevelDB does.
    this.indexBlock = new BlockBuilder(1, 4096);
    this.filter = bloomBitsPerKey > 0 ? new BloomFilterBuilder(bloomBitsPerKey) : null;
    this.out = Buffer.allocUnsafe(OUTPUT_BUFFER_SIZE);
    try {
      this.fd = openSync(path, 'w');
    } catch (cause) {
      throw ioError('creating table', path, cause);
    }
  }

  /** Entries added so far. */
  get entries(): number {
    return this.entryCount;
  }

  /** Size the file would have if finished now, without filter and index: what compaction cuts output files by. */
  get fileSizeEstimate(): number {
    return this.offset + this.dataBlock.sizeEstimate();
  }

  /**
   * Appends an entry. `ikey` is an internal key (user key ++ 8-byte trailer) strictly greater, in internal-key order,
   * than the previous one; otherwise throws INVALID_ARGUMENT. Both arrays are copied before return.
   */
  add(ikey: Uint8Array, value: Uint8Array): void {
    this.addAt(ikey, 0, ikey.length, value, 0, value.length);
  }

  /**
   * `add` of the internal key `src[ko..ko+klen)` and the value `vsrc[vo..vo+vlen)`, read in place (no views to make:
   * a flush reads them straight out of the memtable's arena). One pass over the key finds its common prefix with the
   * previous key, which gives the order check, whether the user key repeats (one bloom entry per user key), the
   * index separator and the block's prefix compression.
   */
  addAt(src: Uint8Array, ko: number, klen: number, vsrc: Uint8Array, vo: number, vlen: number): void {
    this.checkOpen();
    if (klen < TRAILER_SIZE) throw invalidArgument(`internal key of ${klen} bytes is shorter than its trailer`);
    const ulen = klen - TRAILER_SIZE;
    const last = this.lastKey;
    const lastLen = this.lastKeyLen;
    let common = 0;
    let sameUser = false;
    if (this.entryCount > 0) {
      const lastUlen = lastLen - TRAILER_SIZE;
      const m = Math.min(klen, lastLen);
      while (common < m && last[common] === src[ko + common]) common++;
      const um = Math.min(ulen, lastUlen);
      // Keys that differ inside both user keys order by that byte; any other case by the full comparison.
      const ordered =
        common < um ? src[ko + common]! > last[common]! : compareInternalAt(src, ko, klen, last, 0, lastLen) > 0;
      if (!ordered) throw invalidArgument('table keys must be added in strictly increasing internal-key order');
      sameUser = ulen === lastUlen && common >= ulen;
      if (this.pendingIndexEntry) this.addIndexEntry(this.separatorFor(common, um, src[ko + common]));
    }
    if (this.filter !== null && !sameUser) this.filter.addKey(src, ko, ulen);
    if (this.entryCount === 0) this.smallest = src.slice(ko, ko + klen);

    // Properties from the trailer: seq = trailer >> 8, kind = its low byte.
    const t = ko + ulen;
    const hi = ((src[t]! << 24) | (src[t + 1]! << 16) | (src[t + 2]! << 8) | src[t + 3]!) >>> 0;
    const lo3 = (src[t + 4]! << 16) | (src[t + 5]! << 8) | src[t + 6]!;
    const seq = hi * 0x100_0000 + lo3;
    if (seq < this.minSequence) this.minSequence = seq;
    if (seq > this.maxSequence) this.maxSequence = seq;
    if (src[t + 7] === ValueKind.Deletion) this.deletions++;

    // The block's previous key is lastKey unless the block is empty (then the builder shares nothing).
    this.dataBlock.addAt(src, ko, klen, common, vsrc, vo, vlen);
    if (last.length < klen) {
      const grown = new Uint8Array(Math.max(klen, last.length * 2));
      grown.set(last.subarray(0, common));
      this.lastKey = grown;
    }
    const lk = this.lastKey;
    for (let i = common; i < klen; i++) lk[i] = src[ko + i]!;
    this.lastKeyLen = klen;
    this.entryCount++;
    this.rawKeySize += klen;
    this.rawValueSize += vlen;
    if (this.dataBlock.sizeEstimate() >= this.blockSize) this.flushDataBlock();
  }

  /**
   * Writes the remaining data block, the filter, properties, metaindex, index and footer, fsyncs and closes the file.
   * Returns the table's size, entry count and key range. Throws EngineError IO if a write or the fsync fails (the file
   * is then closed but left in place: call `abandon()` to delete it).
   */
  finish(): TableMeta {
    this.checkOpen();
    try {
      if (!this.dataBlock.empty) this.flushDataBlock();
      if (this.pendingIndexEntry) this.addIndexEntry(this.shortSuccessor());

      let filterOffset = -1;
      let filterSize = 0;
      if (this.filter !== null && this.filter.keys > 0) {
        const f = this.filter.finish();
        filterOffset = this.offset;
        filterSize = f.length;
        this.writeBlock(f, false);
      }

      const largest = this.lastKey.slice(0, this.lastKeyLen);
      const indexContents = this.indexBlock.finish();
      const propsOffset = this.offset;
      const propsSize = this.writeBlock(
        encodeProperties({
          entries: this.entryCount,
          deletions: this.deletions,
          dataBlocks: this.dataBlocks,
          dataSize: filterOffset >= 0 ? filterOffset : this.offset,
          indexSize: indexContents.length,
          filterSize,
          rawKeySize: this.rawKeySize,
          rawValueSize: this.rawValueSize,
          smallest: this.smallest,
          largest,
          minSequence: this.entryCount > 0 ? this.minSequence : 0,
          maxSequence: this.entryCount > 0 ? this.maxSequence : 0,
          bloomBitsPerKey: this.bloomBitsPerKey,
          restartInterval: this.restartInterval,
          compression: compressionName(this.compressor?.type ?? CompressionType.None)!,
          creationTime: Date.now(),
        }),
        false,
      );

      const meta = new BlockBuilder(1, 256);
      if (filterOffset >= 0) meta.add(utf8(FILTER_META_KEY), encodeHandle(filterOffset, filterSize));
      meta.add(utf8(PROPERTIES_META_KEY), encodeHandle(propsOffset, propsSize));
      const metaindex = new BlockHandle(this.offset, 0);
      metaindex.size = this.writeBlock(meta.finish(), false);
      const index = new BlockHandle(this.offset, 0);
      index.size = this.writeBlock(indexContents, false);
      const footer = encodeFooter({ metaindex, index });
      this.write(footer);
      this.flushOutput();
      fsyncSync(this.fd);
      this.completed = true;
      return { fileSize: this.offset, entries: this.entryCount, smallest: this.smallest, largest };
    } catch (cause) {
      if (cause instanceof EngineError) throw cause;
      throw ioError('writing table', this.path, cause);
    } finally {
      this.state = 'finished';
      this.closeFd();
    }
  }

  /** Closes and deletes the file. Safe to call after a failed `finish()`; a no-op after a successful one. */
  abandon(): void {
    if (this.state === 'open') {
      this.state = 'abandoned';
      this.closeFd();
      unlinkQuietly(this.path);
    } else if (this.state === 'finished' && !this.completed) {
      // finish() failed part-way: its file is incomplete.
      unlinkQuietly(this.path);
    }
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw closedError(`table builder for ${this.path}`, this.state);
  }

  private closeFd(): void {
    if (this.fd < 0) return;
    try {
      closeSync(this.fd);
    } catch {
      // The descriptor is gone either way.
    }
    this.fd = -1;
  }

  private flushDataBlock(): void {
    const contents = this.dataBlock.finish();
    this.pendingOffset = this.offset;
    this.pendingSize = this.writeBlock(contents, true);
    this.pendingIndexEntry = true;
    this.dataBlocks++;
    this.dataBlock.reset();
  }

  private addIndexEntry(separatorLen: number): void {
    const n = encodeBlockHandle(this.handleScratch, 0, this.pendingOffset, this.pendingSize);
    const sep =
      separatorLen < 0 ? this.lastKey.subarray(0, this.lastKeyLen) : this.separatorScratch.subarray(0, separatorLen);
    this.indexBlock.add(sep, this.handleScratch.subarray(0, n));
    this.pendingIndexEntry = false;
  }

  /**
   * A short internal key k with lastKey <= k < next, like LevelDB's FindShortestSeparator: when the user keys differ
   * at byte i = `common` (< `userCommonLimit`, the shorter user key's length) and lastKey[i] + 1 < next[i] =
   * `nextByte`, the user key lastKey[0..i] ++ (lastKey[i] + 1) with the largest trailer. Leaves it in
   * separatorScratch and returns its length, or -1 to use lastKey itself.
   */
  private separatorFor(common: number, userCommonLimit: number, nextByte: number | undefined): number {
    if (common >= userCommonLimit) return -1;
    const byte = this.lastKey[common]!;
    if (byte >= 0xff || byte + 1 >= nextByte!) return -1;
    return this.writeSeparator(common, byte + 1);
  }

  /** The short successor of lastKey (LevelDB's FindShortSuccessor), for the last index entry; -1 for lastKey itself. */
  private shortSuccessor(): number {
    const a = this.lastKey;
    const alen = this.lastKeyLen - TRAILER_SIZE;
    for (let i = 0; i < alen; i++) {
      if (a[i] !== 0xff) return i + 1 < alen ? this.writeSeparator(i, a[i]! + 1) : -1;
    }
    return -1;
  }

  private writeSeparator(i: number, lastByte: number): number {
    const len = i + 1 + TRAILER_SIZE;
    if (this.separatorScratch.length < len) this.separatorScratch = new Uint8Array(len * 2);
    const s = this.separatorScratch;
    for (let j = 0; j < i; j++) s[j] = this.lastKey[j]!;
    s[i] = lastByte;
    // The largest trailer sorts first among entries of that user key, so every entry of the next block is greater.
    writeTrailer(s, i + 1, MAX_SEQUENCE, SEEK_KIND);
    return len;
  }

  /**
   * Writes one block and its trailer; returns the stored size (without trailer), as recorded in its handle.
   */
  private writeBlock(contents: Uint8Array, compressible: boolean): number {
    let stored = contents;
    let type: number = CompressionType.None;
    if (compressible && this.compressor !== null) {
      const c = this.compressor.compress(contents);
      // Keep the compressed form only if it saves at least 1/8 of the block: below that, reading it costs more
      // than the bytes saved.
      if (c.length <= contents.length - (contents.length >>> 3)) {
        stored = c;
        type = this.compressor.type;
      }
    }
    const trailer = this.trailerScratch;
    writeBlockTrailer(trailer, stored, type);
    this.write(stored);
    this.write(trailer);
    return stored.length;
  }

  private write(bytes: Uint8Array): void {
    if (this.offset + bytes.length > MAX_TABLE_SIZE) {
      throw invalidArgument(`table ${this.path} would exceed ${MAX_TABLE_SIZE} bytes`);
    }
    if (this.outLen + bytes.length > this.out.length) this.flushOutput();
    if (bytes.length >= this.out.length) {
      writeFully(this.fd, bytes);
    } else {
      this.out.set(bytes, this.outLen);
      this.outLen += bytes.length;
    }
    this.offset += bytes.length;
  }

  private flushOutput(): void {
    if (this.outLen === 0) return;
    writeFully(this.fd, this.out.subarray(0, this.outLen));
    this.outLen = 0;
  }
}

function writeFully(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

function utf8(s: string): Uint8Array {
  return Buffer.from(s, 'utf8');
}

function encodeHandle(offset: number, size: number): Uint8Array {
  const b = new Uint8Array(MAX_BLOCK_HANDLE_LENGTH);
  return b.subarray(0, encodeBlockHandle(b, 0, offset, size));
}
