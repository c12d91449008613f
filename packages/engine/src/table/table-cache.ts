import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { CorruptionError, closedError, invalidArgument } from '../base/errors.js';
import { tableFileName } from '../base/filenames.js';
import type { BlockCache } from './block-cache.js';
import { type FilterCounters, TableReader } from './table-reader.js';

/** Options of {@link TableCache}. */
export interface TableCacheOptions {
  /** Most table readers (file descriptors) kept open at once. Default 500. */
  maxOpenFiles?: number;
  /** Block cache handed to every reader; shared, not owned: the table cache never clears it. */
  blockCache?: BlockCache;
  /** Check data block checksums on read. Default true. */
  verifyChecksums?: boolean;
  /** The path a reader of table `n` opens (default: its name in `dir`); a read-only view gives its descriptors'. */
  pathOf?: ((fileNumber: number) => string) | undefined;
}

/**
 * Opens the tables of one engine directory (`NNNNNN.sst`) by file number and keeps at most `maxOpenFiles` of them
 * open, closing the least recently used. A reader closed while an iterator still pins it keeps its descriptor until
 * that iterator closes, so the bound can be exceeded by the tables that open iterators hold.
 *
 * Usage: take a reader with `get(fileNumber)` and use it synchronously (a `get`, or creating an iterator, which pins
 * it). Do not keep a reader across an `await`: the cache may close it meanwhile. `close()` closes every reader.
 */
export class TableCache {
  readonly dir: string;
  private readonly maxOpenFiles: number;
  private readonly blockCache: BlockCache | undefined;
  private readonly verifyChecksums: boolean;
  private readonly pathOf: ((fileNumber: number) => string) | undefined;
  /** Open readers, least recently used first (a Map keeps insertion order; a hit on a full cache re-inserts). */
  private readonly readers = new Map<number, TableReader>();
  /** Bloom filter outcomes of every reader this cache opened, for `engine.stats()`. */
  readonly filterCounters: FilterCounters = { checked: 0, useful: 0 };
  private closed = false;

  constructor(dir: string, options: TableCacheOptions = {}) {
    const maxOpenFiles = options.maxOpenFiles ?? 500;
    if (!Number.isInteger(maxOpenFiles) || maxOpenFiles < 1) {
      throw invalidArgument(`maxOpenFiles must be an integer >= 1, got ${maxOpenFiles}`);
    }
    this.dir = dir;
    this.maxOpenFiles = maxOpenFiles;
    this.blockCache = options.blockCache;
    this.verifyChecksums = options.verifyChecksums ?? true;
    this.pathOf = options.pathOf;
  }

  /**
   * The open reader of table `fileNumber`, opening it if needed (and closing the least recently used reader beyond
   * `maxOpenFiles`); a newly opened table must have `expectedSize` bytes when given (the manifest's record of it).
   * Throws what TableReader.open throws (IO, CorruptionError), CorruptionError for a size other than expected, or EngineError CLOSED
   * after `close()`. The cache owns the reader: do not close it.
   */
  get(fileNumber: number, expectedSize?: number): TableReader {
    if (this.closed) throw closedError(`table cache of ${this.dir}`);
    const readers = this.readers;
    let reader = readers.get(fileNumber);
    if (reader !== undefined) {
      // Recency only matters once the cache is full and must choose a victim; below that, skip the re-insertion.
      if (readers.size >= this.maxOpenFiles) {
        readers.delete(fileNumber);
        readers.set(fileNumber, reader);
      }
      return reader;
    }
    const path = this.pathOf?.(fileNumber) ?? tableFileName(this.dir, fileNumber);
    try {
      reader = TableReader.open(path, {
        fileNumber,
        cache: this.blockCache,
        verifyChecksums: this.verifyChecksums,
        filterCounters: this.filterCounters,
      });
    } catch (err) {
      // A table cut short fails the read of its footer: say what is wrong with it, if its size is what it is.
      if (expectedSize !== undefined && err instanceof CorruptionError)
        this.checkSize(fileNumber, fileSize(path), expectedSize);
      throw err;
    }
    this.checkSize(fileNumber, reader.fileSize, expectedSize, reader);
    readers.set(fileNumber, reader);
    if (readers.size > this.maxOpenFiles) {
      const [oldest, victim] = readers.entries().next().value as [number, TableReader];
      readers.delete(oldest);
      victim.close();
    }
    return reader;
  }

  /** Throws CorruptionError (closing `reader`) if table `fileNumber` has `size` bytes where `expected` were recorded. */
  private checkSize(fileNumber: number, size: number, expected: number | undefined, reader?: TableReader): void {
    if (expected === undefined || size === expected || size < 0) return;
    reader?.close();
    const path = tableFileName(this.dir, fileNumber);
    throw new CorruptionError(
      path,
      0,
      `table ${basename(path)} of ${expected} bytes (as the manifest records it), the file has ${size}`,
    );
  }

  /**
   * Forgets table `fileNumber` because its file is being deleted: closes its reader (once no iterator pins it) and
   * drops its blocks from the block cache.
   */
  evict(fileNumber: number): void {
    const reader = this.readers.get(fileNumber);
    if (reader !== undefined) {
      this.readers.delete(fileNumber);
      reader.close();
    }
    this.blockCache?.evictFile(fileNumber);
  }

  /** Readers open now. */
  get openCount(): number {
    return this.readers.size;
  }

  /** Closes every reader (each descriptor closes now, or when the last iterator pinning it closes). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const reader of this.readers.values()) reader.close();
    this.readers.clear();
  }
}

/** The size of the file at `path`, or -1 if it cannot be stat(2)ed. */
function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return -1;
  }
}
