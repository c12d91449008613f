import { closeSync, fsyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { crc32c, maskCrc } from '../base/crc32c.js';
import { EngineError, ErrorCodes, invalidArgument } from '../base/errors.js';
import {
  compareInternalAt,
  MAX_SEQUENCE,
  SEEK_KIND,
  TRAILER_SIZE,
  ValueKind,
  writeTrailer,
} from '../base/internal-key.js';
import type { Compression } from '../base/options.js';
import { BlockBuilder, writeU32LE } from './block-builder.js';
import { BloomFilterBuilder } from './bloom.js';
import { type BlockCompressor, blockCompressor, CompressionType, compressionName } from './compression.js';

/**
 * Writes one SSTable. Layout (FORMAT.md, "SSTable"):
 *
 *   table := dataBlock* | filterBlock? | propertiesBlock | metaindexBlock | indexBlock | footer
 *   every block is followed by its 5-byte trailer: compression type (uint8) | masked CRC32C (uint32le) of the
 *   block's stored bytes ++ the type byte.
 *
 * The index block holds, for each data block, a separator key (>= every key of that block, < every key of the next)
 * mapped to the block's handle. The metaindex maps the names below to the filter and properties handles. The footer
 * has a fixed size so a reader finds it by seeking to the end of the file.
 */

/** Bytes after every block: compression type (1) + masked CRC32C (4). */
export const BLOCK_TRAILER_SIZE = 5;

/**
 * Footer, 40 bytes at the end of the file (all little-endian):
 *
 *   metaindex offset: uint64 | metaindex size: uint32 | index offset: uint64 | index size: uint32 |
 *   format version: uint32 | masked CRC32C of the preceding 28 bytes: uint32 | magic: uint64
 */
export const FOOTER_SIZE = 40;

/** Magic number at the very end of every table: the bytes "heapless" read as a little-endian uint64. */
export const TABLE_MAGIC = new Uint8Array([0x68, 0x65, 0x61, 0x70, 0x6c, 0x65, 0x73, 0x73]);

/** Table format version written in the footer; readers reject versions they do not know. */
export const TABLE_FORMAT_VERSION = 1;

/** Metaindex key of the bloom filter block. */
export const FILTER_META_KEY = 'filter.bloom';
/** Metaindex key of the properties block. */
export const PROPERTIES_META_KEY = 'properties';

/** Options of {@link TableBuilder}. */
export interface TableBuilderOptions {
  /** Target uncompressed size of a data block, in bytes. Default 4096. */
  blockSize?: number;
  /** Entries between restart points in data blocks. Default 16. */
  restartInterval?: number;
  /** Bloom filter bits per user key; 0 writes no filter. Default 10 (about 1% false positives). */
  bloomBitsPerKey?: number;
  /** Block compression (see compression.ts); a block is stored compressed only if that saves at least 12.5%. Default 'none'. */
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
// Tables stay below 4 GiB so that block offsets fit the block cache key and 32-bit sizes.
const MAX_TABLE_SIZE = 2 ** 32 - 1;

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
  private readonly handleScratch = new Uint8Array(20);
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
      throw new EngineError(ErrorCodes.IO, `cannot create table ${path}`, { cause });
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
      const props = new BlockBuilder(1, 1024);
      const num = (name: string, v: number) => props.add(utf8(name), encodeVarint(v));
      // Property names in bytewise order (a block's keys are kept sorted even where nothing seeks them).
      num('bloom.bits.per.key', this.bloomBitsPerKey);
      props.add(utf8('compression'), utf8(compressionName(this.compressor?.type ?? CompressionType.None)!));
      num('creation.time', Date.now());
      num('data.blocks', this.dataBlocks);
      num('data.size', filterOffset >= 0 ? filterOffset : this.offset);
      num('deletions', this.deletions);
      num('entries', this.entryCount);
      num('filter.size', filterSize);
      num('index.size', indexContents.length);
      props.add(utf8('largest'), largest);
      num('max.sequence', this.entryCount > 0 ? this.maxSequence : 0);
      num('min.sequence', this.entryCount > 0 ? this.minSequence : 0);
      num('raw.key.size', this.rawKeySize);
      num('raw.value.size', this.rawValueSize);
      num('restart.interval', this.restartInterval);
      props.add(utf8('smallest'), this.smallest);
      const propsOffset = this.offset;
      const propsContents = props.finish();
      const propsSize = this.writeBlock(propsContents, false);

      const meta = new BlockBuilder(1, 256);
      if (filterOffset >= 0) meta.add(utf8(FILTER_META_KEY), encodeHandle(filterOffset, filterSize));
      meta.add(utf8(PROPERTIES_META_KEY), encodeHandle(propsOffset, propsSize));
      const metaOffset = this.offset;
      const metaSize = this.writeBlock(meta.finish(), false);

      const indexOffset = this.offset;
      const indexSize = this.writeBlock(indexContents, false);

      const footer = new Uint8Array(FOOTER_SIZE);
      writeU64LE(footer, 0, metaOffset);
      writeU32LE(footer, 8, metaSize);
      writeU64LE(footer, 12, indexOffset);
      writeU32LE(footer, 20, indexSize);
      writeU32LE(footer, 24, TABLE_FORMAT_VERSION);
      writeU32LE(footer, 28, maskCrc(crc32c(footer.subarray(0, 28))));
      footer.set(TABLE_MAGIC, 32);
      this.write(footer);
      this.flushOutput();
      fsyncSync(this.fd);
      this.completed = true;
      return { fileSize: this.offset, entries: this.entryCount, smallest: this.smallest, largest };
    } catch (cause) {
      if (cause instanceof EngineError) throw cause;
      throw new EngineError(ErrorCodes.IO, `cannot write table ${this.path}`, { cause });
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
    if (this.state !== 'open')
      throw new EngineError(ErrorCodes.CLOSED, `table builder for ${this.path} is ${this.state}`);
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
    const n = encodeHandleInto(this.handleScratch, this.pendingOffset, this.pendingSize);
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
   * Trailer: type (uint8) | maskCrc(crc32c(stored ++ type)) (uint32le).
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
    trailer[0] = type;
    const crc = crc32c(trailer.subarray(0, 1), crc32c(stored));
    writeU32LE(trailer, 1, maskCrc(crc));
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

/** Writes `v` (< 2^53) as a little-endian uint64 at `buf[at..at+8)`. */
function writeU64LE(buf: Uint8Array, at: number, v: number): void {
  writeU32LE(buf, at, v >>> 0);
  writeU32LE(buf, at + 4, Math.floor(v / 0x1_0000_0000));
}

/** Writes `v` (0 <= v < 2^53) as a LEB128 varint at `out[at]`; returns the offset after it. */
export function putVarint64(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}

function encodeVarint(v: number): Uint8Array {
  const b = new Uint8Array(10);
  return b.subarray(0, putVarint64(b, 0, v));
}

/**
 * Block handle, the value of index and metaindex entries: offset varint64 | size varint64 (size without trailer).
 * Writes it at `out[0..)` and returns its length (at most 20 bytes).
 */
export function encodeHandleInto(out: Uint8Array, offset: number, size: number): number {
  return putVarint64(out, putVarint64(out, 0, offset), size);
}

function encodeHandle(offset: number, size: number): Uint8Array {
  const b = new Uint8Array(20);
  return b.subarray(0, encodeHandleInto(b, offset, size));
}
