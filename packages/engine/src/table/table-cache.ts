import { closedError, invalidArgument } from '../base/errors.js';
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
  }

  /**
   * The open reader of table `fileNumber`, opening it if needed (and closing the least recently used reader beyond
   * `maxOpenFiles`). Throws what TableReader.open throws (IO, CorruptionError), or EngineError CLOSED
   * after `close()`. The cache owns the reader: do not close it.
   */
  get(fileNumber: number): TableReader {
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
    reader = TableReader.open(tableFileName(this.dir, fileNumber), {
      fileNumber,
      cache: this.blockCache,
      verifyChecksums: this.verifyChecksums,
      filterCounters: this.filterCounters,
    });
    readers.set(fileNumber, reader);
    if (readers.size > this.maxOpenFiles) {
      const [oldest, victim] = readers.entries().next().value as [number, TableReader];
      readers.delete(oldest);
      victim.close();
    }
    return reader;
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
