/** Entries asked of `nextv` per call by every system's full scan, so all pay the same number of round trips. */
export const SCAN_CHUNK = 1000;

/** The batched cursor classic-level, RocksDB and the heapless engine share (abstract-level's `nextv`). */
export interface NextvIterator {
  nextv(size: number): Promise<unknown[]>;
  close(): void | Promise<void>;
}

/** Reads `iterator` to its end in `SCAN_CHUNK` batches and returns how many entries it gave; always closes it. */
export async function countByNextv(iterator: NextvIterator): Promise<number> {
  let count = 0;
  try {
    for (;;) {
      const entries = await iterator.nextv(SCAN_CHUNK);
      if (entries.length === 0) return count;
      count += entries.length;
    }
  } finally {
    await iterator.close();
  }
}
