/**
 * The pages of a mapped map image (native.ts `loadSections`: each section a private file mapping, copied page by
 * page on first write) made private in bulk before many writes go in, instead of one page fault per page: on this
 * project's 2-core VM a fault cost 15-150 µs, MADV_POPULATE_WRITE 1.5-4.5 µs a page. Used by a crash open's
 * replay (pending-suffix.ts) and by large batches (map-batch.ts): 10,000 new keys written onto a 1M image fault on
 * some 4,000 index pages, 0.3-0.6 s, where copying those pages first takes 10-20 ms.
 *
 * `prepare` copies, in two rounds, the index table's pages where the writes' probes start (found from the hash
 * alone), then — read from the now private table — the pages of each key's record as long as its new value.
 * Nothing is read through the mapping before it is made private: a page read first would need its mapping torn
 * down again to be copied, which costs more than the fault it saves. A slot of another key with the same hash only
 * adds a page; what is not foreseen (a probe past the next page, a block from a free list or the arena's end)
 * faults as before. A page is asked for once.
 */
import { type Arena, LOC_EMPTY, LOC_TOMBSTONE, locOffset, locSegment, recordBytes } from '../memory/arena.js';
import { SLOT_BYTES } from '../memory/hash-table.js';
import { native } from '../persist/native.js';
import type { MapIndex } from './map-index.js';

/**
 * Batches of at least this many sets and deletes have their pages copied first: a page fault costs as much as
 * several madvise calls, and the planning costs O(writes · log writes).
 */
export const BULK_POPULATE_MIN_WRITES = 16;
/**
 * The granule of the pages marked for copying: 4 KiB, the page of x86-64 and of most arm64 kernels (a larger page is
 * rounded out to whole pages by the helper, so it is still covered).
 */
const PAGE_BYTES = 4096;
/** Slots near the end of a table page: a probe from there may go on into the next page, which is marked too. */
const PAGE_END_SLOTS = 8;

/** The writes to prepare for: per write, its key's hash and the bytes of its key and new value (0 for a delete). */
export interface PlannedWrites {
  readonly count: number;
  readonly hashes: Int32Array;
  readonly keyLengths: Int32Array;
  readonly valueLengths: Int32Array;
}

export class ImagePages {
  /** Pages copied in bulk so far. */
  pages = 0;
  /** Per page of the image's index table and of each image segment: 1 once copied (not asked for again). */
  private tableDone: Uint8Array | null = null;
  private tableOf: SharedArrayBuffer | null = null;
  private readonly segmentsDone: Uint8Array[];

  /** For the map parts just restored from a mapped image: its segments are the arena's buffers now. */
  constructor(
    private readonly index: MapIndex,
    private readonly arena: Arena,
  ) {
    this.segmentsDone = arena.buffers.map((b) => new Uint8Array(Math.ceil(b.byteLength / PAGE_BYTES)));
  }

  /** Copies the pages `writes` will write (see the file's comment). Returns the pages copied; 0 without the helper. */
  prepare(writes: PlannedWrites): number {
    if (native === null || native.populate === null || writes.count === 0) return 0;
    const table = this.index.table;
    const { slots, hashes, mask } = table;
    if (this.tableOf !== table.sab) {
      // The image's table, or a new one the map grew into (fresh memory: nothing to copy, but no harm).
      this.tableOf = table.sab;
      this.tableDone = new Uint8Array(Math.ceil(table.sab.byteLength / PAGE_BYTES));
    }
    const tableDone = this.tableDone!;
    const tablePages: number[] = [];
    const slotsPerPage = PAGE_BYTES / SLOT_BYTES;
    for (let c = 0; c < writes.count; c++) {
      const slot = writes.hashes[c]! & mask;
      const page = Math.floor(slot / slotsPerPage);
      if (tableDone[page] === 0) tablePages.push(page);
      if (slot % slotsPerPage >= slotsPerPage - PAGE_END_SLOTS && page + 1 < tableDone.length)
        if (tableDone[page + 1] === 0) tablePages.push(page + 1);
    }
    const tableRanges: Uint8Array[] = [];
    const tableCount = rangesOf(tablePages, tableDone, table.sab, tableRanges);
    if (tableRanges.length > 0 && !native.populate(tableRanges)) return 0;
    // The image's segments only: one the arena added since is fresh memory.
    const done = this.segmentsDone;
    const marked: number[][] = done.map(() => []);
    for (let c = 0; c < writes.count; c++) {
      const h = writes.hashes[c]!;
      const bytes = recordBytes(writes.keyLengths[c]!, writes.valueLengths[c]!);
      for (let i = h & mask; ; i = (i + 1) & mask) {
        const loc = slots[i * 2 + 1]!;
        if (loc === LOC_EMPTY) break;
        if (loc === LOC_TOMBSTONE || hashes[i * 2] !== h) continue;
        const seg = locSegment(loc);
        const d = done[seg];
        if (d === undefined) continue;
        const off = locOffset(loc);
        for (let p = Math.floor(off / PAGE_BYTES), last = Math.floor((off + bytes - 1) / PAGE_BYTES); p <= last; p++) {
          if (p < d.length && d[p] === 0) marked[seg]!.push(p);
        }
      }
    }
    const ranges: Uint8Array[] = [];
    let pages = tableCount;
    for (const [seg, m] of marked.entries()) pages += rangesOf(m, done[seg]!, this.arena.buffers[seg]!, ranges);
    if (ranges.length > 0 && !native.populate(ranges)) pages = tableCount;
    this.pages += pages;
    return pages;
  }
}

/**
 * Appends to `out` a view of `buf` for each run of the pages `pages` (in any order, repeats allowed) not marked in
 * `done`, and marks them; returns the pages.
 */
function rangesOf(pages: number[], done: Uint8Array, buf: ArrayBufferLike, out: Uint8Array[]): number {
  if (pages.length === 0) return 0;
  pages.sort((a, b) => a - b);
  let count = 0;
  for (let i = 0; i < pages.length; ) {
    const first = pages[i]!;
    let end = first;
    // A run: this page and those that follow it without a gap (repeats skipped).
    while (i < pages.length && pages[i]! <= end) {
      if (pages[i] === end) end++;
      i++;
    }
    let p = first;
    while (p < end) {
      if (done[p] === 1) {
        p++;
        continue;
      }
      const start = p;
      while (p < end && done[p] === 0) done[p++] = 1;
      count += p - start;
      out.push(new Uint8Array(buf, start * PAGE_BYTES, Math.min(buf.byteLength, p * PAGE_BYTES) - start * PAGE_BYTES));
    }
  }
  return count;
}
