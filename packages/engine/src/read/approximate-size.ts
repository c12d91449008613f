/**
 * `approximateSize(start, end)`: about how many bytes the keys in [start, end) take (LevelDB's GetApproximateSizes,
 * RocksDB's include_memtables). On disk, each table contributes the distance between where the two keys would fall
 * in it, read from its index block (the offset of the data block that would hold the key): a table wholly inside the
 * range counts whole, one wholly outside not at all, and neither opens its file. In memory, the memtables' entries in
 * the range count their key and value bytes (a walk over the entries in the range).
 */
import { compareBytes, MAX_SEQUENCE, makeInternalKey, SEEK_KIND, TRAILER_SIZE } from '../base/internal-key.js';
import type { TableCache } from '../table/table-cache.js';
import type { Version } from '../version/version.js';
import type { FileMetaData } from '../version/version-edit.js';
import type { MemtableSet } from '../write/memtables.js';

/** Options of `engine.approximateSize`. */
export interface ApproximateSizeOptions {
  /** Count the tables' bytes in the range. Default true. */
  files?: boolean;
  /** Count the key and value bytes of the memtables' entries in the range (not yet in any table). Default true. */
  memtables?: boolean;
}

const userKey = (ikey: Uint8Array): Uint8Array => ikey.subarray(0, ikey.length - TRAILER_SIZE);

/** Where entries >= `key` (a user key; undefined: past everything) begin in table `f`, in bytes from its start. */
function offsetIn(f: FileMetaData, key: Uint8Array | undefined, tables: TableCache): number {
  if (key === undefined || compareBytes(userKey(f.largest), key) < 0) return f.size;
  if (compareBytes(userKey(f.smallest), key) >= 0) return 0;
  return tables.get(f.number).approximateOffsetOf(makeInternalKey(key, MAX_SEQUENCE, SEEK_KIND));
}

/** Bytes the tables of `version` hold for user keys in [start, end) (undefined bounds: unbounded). */
export function tableBytesInRange(
  version: Version,
  tables: TableCache,
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
): number {
  let total = 0;
  for (const files of version.files) {
    for (const f of files) {
      const from = start === undefined ? 0 : offsetIn(f, start, tables);
      const to = offsetIn(f, end, tables);
      if (to > from) total += to - from;
    }
  }
  return total;
}

/** Key and value bytes of the memtables' entries (every version of each key) with user keys in [start, end). */
export function memtableBytesInRange(
  memtables: MemtableSet,
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
): number {
  let total = 0;
  for (const it of memtables.iterators()) {
    try {
      if (start === undefined) it.seekToFirst();
      else it.seek(makeInternalKey(start, MAX_SEQUENCE, SEEK_KIND));
      for (; it.valid(); it.next()) {
        const k = it.key();
        if (end !== undefined && compareBytes(userKey(k), end) >= 0) break;
        total += k.length - TRAILER_SIZE + it.valueLength();
      }
    } finally {
      it.close();
    }
  }
  return total;
}
