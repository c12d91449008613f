/**
 * The writes a crash open still owes its image (map-replay.ts decoded them from the WAL after the image's sequence),
 * applied after the open instead of during it. Applying them copies every image page they touch — on this
 * project's VM, 10,000 writes onto a 1M image touch 14,000 pages and take 60-150 ms, two to five times the rest of
 * the open — so the open only indexes them by key hash and returns, and they are folded into the map's memory:
 *
 * - a key's writes, before any read or write of that key (`foldKey`, `foldBytes`): every write whose key has that
 *   hash, in commit order (a write of another key with the same hash is applied early, which changes nothing);
 * - all of them, before anything that sees the map as a whole: size, iteration, scans, sharing with readers,
 *   images, checkpoints, close (`settle`);
 * - the rest in the background, `STEP_WRITES` per event-loop turn, each step first copying the pages its writes
 *   will touch in bulk (MADV_POPULATE_WRITE: a few µs a page, against 15-150 µs for a page fault here).
 *
 * The engine holds all of them already (they are its WAL), so nothing is persisted: only the map's memory is late.
 * Folding in another order than the commit order gives the same map: each key's writes keep their order, and keys
 * do not depend on each other. The open checked every write (map-replay.ts `decodeSuffix`), so a fold cannot fail
 * on a key or value, only on memory (the arena full): a background step that fails stops, and the next fold of that
 * key or the next `settle` throws the error to its caller, as the write that needed the memory would.
 */
import { hashBytes, type KeyHasher } from '../key-bytes.js';
import { type Arena, LOC_EMPTY, LOC_TOMBSTONE, locOffset, locSegment, recordBytes } from '../memory/arena.js';
import { SLOT_BYTES } from '../memory/hash-table.js';
import { native } from '../persist/native.js';
import type { MapIndex } from './map-index.js';
import type { SuffixWrites } from './map-replay.js';
import type { MapStore } from './map-store.js';

/**
 * Replays of more writes than this have the pages of each step made private in bulk; fewer writes fault their
 * pages one by one (cheaper for a handful).
 */
const BULK_POPULATE_MIN_WRITES = 256;
/** Writes folded per background step: a few milliseconds of the event loop on this VM. */
const STEP_WRITES = 256;
/**
 * The granule of the pages marked for copying: 4 KiB, the page of x86-64 and of most arm64 kernels (a larger page is
 * rounded out to whole pages by the helper, so it is still covered).
 */
const PAGE_BYTES = 4096;
/** Slots near the end of a table page: a probe from there may go on into the next page, which is marked too. */
const PAGE_END_SLOTS = 8;

/** The parts a fold writes. */
export interface FoldTarget {
  readonly index: MapIndex;
  readonly arena: Arena;
  readonly store: MapStore;
}

export class PendingSuffix {
  /** Write numbers by key hash (one number, or several in commit order). */
  private readonly byHash = new Map<number, number | number[]>();
  /** 1 where the write is in the map. */
  private readonly folded: Uint8Array;
  /** Writes not folded yet. */
  private left: number;
  /** The background's next write to look at: every write before it is folded. */
  private cursor = 0;
  private background: NodeJS.Immediate | undefined;
  /** Why the background stopped (the error of its fold), else undefined. */
  private stoppedBy: unknown;
  /** Pages copied in bulk so far. */
  pages = 0;
  /** Per page of the image's index table and of each image segment: 1 once copied (not asked for again). */
  private tableDone: Uint8Array | null = null;
  private segmentsDone: Uint8Array[] | null = null;
  private tableOf: SharedArrayBuffer | null = null;

  /**
   * `writes` (decoded from the WAL, in commit order) owed to the image just restored into `target`; `mapped` if
   * the image's pages are a private file mapping (copied on first write), which makes bulk copies worth it.
   */
  constructor(
    private readonly target: FoldTarget,
    private readonly writes: SuffixWrites,
    private readonly mapped: boolean,
  ) {
    const { keys } = writes;
    this.folded = new Uint8Array(keys.length);
    this.left = keys.length;
    const byHash = this.byHash;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const h = hashBytes(key, 1, key.length - 1);
      const had = byHash.get(h);
      if (had === undefined) byHash.set(h, i);
      else if (typeof had === 'number') byHash.set(h, [had, i]);
      else had.push(i);
    }
  }

  /** Writes not in the map yet. */
  get remaining(): number {
    return this.left;
  }

  /** True once every write is in the map. */
  get done(): boolean {
    return this.left === 0;
  }

  /** Starts folding in the background, one step per event-loop turn, until done or `stop`. */
  start(): void {
    if (this.left > 0 && this.background === undefined && this.stoppedBy === undefined)
      this.background = setImmediate(this.step);
  }

  /** Stops the background (the writes left stay owed: `settle` still folds them). Idempotent. */
  stop(): void {
    if (this.background !== undefined) clearImmediate(this.background);
    this.background = undefined;
  }

  /** Folds the writes of the string key `key` (hashed by `hasher`, which throws INVALID_ARGUMENT for a bad key). */
  foldString(key: string, hasher: KeyHasher): void {
    this.foldHash(hasher.hashString(key));
  }

  /** Folds the writes of the key held in `bytes` from `start`, `length` bytes long. */
  foldBytes(bytes: Uint8Array, start: number, length: number): void {
    this.foldHash(hashBytes(bytes, start, length));
  }

  /** Folds every write left. Throws what a fold throws (the arena full); what it did stays done. */
  settle(): void {
    this.stop();
    while (this.left > 0) this.foldNext(Number.MAX_SAFE_INTEGER);
  }

  private foldHash(h: number): void {
    const found = this.byHash.get(h);
    if (found === undefined) return;
    this.byHash.delete(h);
    if (typeof found === 'number') this.foldOne(found);
    else for (const i of found) this.foldOne(i);
  }

  private foldOne(i: number): void {
    if (this.folded[i] === 1) return;
    this.target.store.replay(this.writes.keys[i]!, this.writes.values[i]);
    this.folded[i] = 1;
    this.left--;
  }

  private readonly step = (): void => {
    this.background = undefined;
    try {
      this.foldNext(STEP_WRITES);
    } catch (err) {
      this.stoppedBy = err;
      return;
    }
    this.start();
  };

  /** Folds the next `n` writes not folded yet (their pages copied in bulk first, for a large mapped replay). */
  private foldNext(n: number): void {
    const chunk: number[] = [];
    const folded = this.folded;
    let i = this.cursor;
    for (const end = folded.length; i < end && chunk.length < n; i++) if (folded[i] === 0) chunk.push(i);
    if (this.mapped && this.writes.keys.length > BULK_POPULATE_MIN_WRITES) this.pages += this.populate(chunk);
    for (const w of chunk) this.foldOne(w);
    // Folded by key meanwhile (their hash taken out), or just now: the background need not look at them again.
    this.cursor = i;
    if (this.left === 0) this.byHash.clear();
  }

  /**
   * Makes private in bulk the pages of the image that the writes `chunk` will write, in two rounds: the index table's
   * pages where their probes start (found from the hash alone), then — read from the now private table — the pages
   * of each key's record as long as its new value. Nothing is read through the mapping before it is made private: a
   * page read first would need its mapping torn down again to be copied, which costs more than the fault it saves.
   * A slot of another key with the same hash only adds a page; what is not foreseen (a probe past the next page, a
   * block from a free list or the arena's end) faults as before. Returns the pages populated; 0 without the native
   * helper or where the kernel cannot.
   */
  private populate(chunk: readonly number[]): number {
    if (native === null || native.populate === null || chunk.length === 0) return 0;
    const { index, arena } = this.target;
    const { keys, values } = this.writes;
    const table = index.table;
    const { slots, hashes, mask } = table;
    if (this.tableOf !== table.sab) {
      // The image's table, or a new one the map grew into (fresh memory: nothing to copy, but no harm).
      this.tableOf = table.sab;
      this.tableDone = new Uint8Array(Math.ceil(table.sab.byteLength / PAGE_BYTES));
    }
    this.segmentsDone ??= arena.buffers.map((b) => new Uint8Array(Math.ceil(b.byteLength / PAGE_BYTES)));
    const tableDone = this.tableDone!;
    const tablePages = new Uint8Array(tableDone.length);
    const hashesOf = new Int32Array(chunk.length);
    const slotsPerPage = PAGE_BYTES / SLOT_BYTES;
    for (let c = 0; c < chunk.length; c++) {
      const key = keys[chunk[c]!]!;
      const h = hashBytes(key, 1, key.length - 1);
      hashesOf[c] = h;
      const slot = h & mask;
      const page = Math.floor(slot / slotsPerPage);
      tablePages[page] = 1;
      if (slot % slotsPerPage >= slotsPerPage - PAGE_END_SLOTS && page + 1 < tablePages.length)
        tablePages[page + 1] = 1;
    }
    const tableRanges: Uint8Array[] = [];
    const tableCount = rangesOf(tablePages, tableDone, table.sab, tableRanges);
    if (!native.populate(tableRanges)) return 0;
    // The image's segments only: one the arena added since is fresh memory.
    const done = this.segmentsDone;
    const marks = done.map((d) => new Uint8Array(d.length));
    for (let c = 0; c < chunk.length; c++) {
      const w = chunk[c]!;
      const key = keys[w]!;
      const h = hashesOf[c]!;
      const bytes = recordBytes(key.length - 1, values[w]?.length ?? 0);
      for (let i = h & mask; ; i = (i + 1) & mask) {
        const loc = slots[i * 2 + 1]!;
        if (loc === LOC_EMPTY) break;
        if (loc === LOC_TOMBSTONE || hashes[i * 2] !== h) continue;
        const m = marks[locSegment(loc)];
        if (m === undefined) continue;
        const off = locOffset(loc);
        for (let p = Math.floor(off / PAGE_BYTES), last = Math.floor((off + bytes - 1) / PAGE_BYTES); p <= last; p++) {
          if (p < m.length) m[p] = 1;
        }
      }
    }
    const ranges: Uint8Array[] = [];
    let pages = tableCount;
    for (const [seg, m] of marks.entries()) pages += rangesOf(m, done[seg]!, arena.buffers[seg]!, ranges);
    return native.populate(ranges) ? pages : tableCount;
  }
}

/**
 * Appends to `out` a view of `buf` for each run of pages marked in `marks` and not in `done`, and marks them done;
 * returns the pages.
 */
function rangesOf(marks: Uint8Array, done: Uint8Array, buf: ArrayBufferLike, out: Uint8Array[]): number {
  let pages = 0;
  for (let p = 0; p < marks.length; p++) {
    if (marks[p] === 0 || done[p] === 1) continue;
    const first = p;
    while (p < marks.length && marks[p] === 1 && done[p] === 0) done[p++] = 1;
    pages += p - first;
    const start = first * PAGE_BYTES;
    out.push(new Uint8Array(buf, start, Math.min(buf.byteLength, p * PAGE_BYTES) - start));
  }
  return pages;
}
