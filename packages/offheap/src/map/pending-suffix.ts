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
import type { Arena } from '../memory/arena.js';
import type { ImagePages } from './image-pages.js';

/**
 * Replays of more writes than this have the pages of each step made private in bulk; fewer writes fault their
 * pages one by one (a replay that small is folded almost at once anyway).
 */
const BULK_POPULATE_MIN_WRITES = 256;

import type { MapIndex } from './map-index.js';
import type { SuffixWrites } from './map-replay.js';
import type { MapStore } from './map-store.js';

/** Writes folded per background step: a few milliseconds of the event loop on this VM. */
const STEP_WRITES = 256;
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

  /**
   * `writes` (decoded from the WAL, in commit order) owed to the image just restored into `target`; `pagesOf`
   * when the image's pages are a private file mapping (copied on first write), which makes bulk copies worth it.
   */
  constructor(
    private readonly target: FoldTarget,
    private readonly writes: SuffixWrites,
    private readonly pagesOf: ImagePages | null,
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
    const w = this.writes;
    this.target.store.replay(w.keys[i]!, w.values[i], w.versions[i]!, w.expiries[i]!);
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
    if (this.writes.keys.length > BULK_POPULATE_MIN_WRITES) this.pages += this.populate(chunk);
    for (const w of chunk) this.foldOne(w);
    // Folded by key meanwhile (their hash taken out), or just now: the background need not look at them again.
    this.cursor = i;
    if (this.left === 0) this.byHash.clear();
  }

  /** Copies in bulk the image pages that the writes `chunk` will write (image-pages.ts); returns the pages. */
  private populate(chunk: readonly number[]): number {
    const pages = this.pagesOf;
    if (pages === null) return 0;
    const { keys, values } = this.writes;
    const planned = {
      count: chunk.length,
      hashes: new Int32Array(chunk.length),
      keyLengths: new Int32Array(chunk.length),
      valueLengths: new Int32Array(chunk.length),
    };
    for (let c = 0; c < chunk.length; c++) {
      const key = keys[chunk[c]!]!;
      planned.hashes[c] = hashBytes(key, 1, key.length - 1);
      planned.keyLengths[c] = key.length - 1;
      planned.valueLengths[c] = values[chunk[c]!]?.length ?? 0;
    }
    return pages.prepare(planned);
  }
}
