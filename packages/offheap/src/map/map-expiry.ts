/**
 * The active expiry of a map (FORMAT.md §13): an unref'd timer that, every EXPIRY_PERIOD_MS, removes the keys whose
 * expiry has passed, in slices of at most about SLICE_MS and SLICE_ENTRIES heap entries each, yielding to the event
 * loop between slices, so that the owner never stalls for more than about a millisecond. Reads never wait for it:
 * an expired record is absent to every read at once; this only gives its memory (and its engine entry) back.
 * `close()` clears the timer and any slice to come.
 */
import type { MapStore } from './map-store.js';
import type { MapWriter } from './map-writer.js';

/** How often the expiry looks for due keys: a key's memory is reclaimed within about this after it expired. */
const EXPIRY_PERIOD_MS = 100;
/** A slice's time budget, checked every SLICE_ENTRIES entries: the longest the owner waits on expiry. */
const SLICE_MS = 1;
const SLICE_ENTRIES = 64;

export class MapExpiry {
  private timer: NodeJS.Timeout | null = null;
  private slice: NodeJS.Immediate | null = null;

  constructor(
    private readonly writer: MapWriter,
    private readonly store: MapStore,
  ) {}

  /** Starts the timer (idempotent). */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(this.tick, EXPIRY_PERIOD_MS);
    this.timer.unref();
  }

  /**
   * Removes every key due at the map's clock now, all at once (what the timer does in slices); returns how many heap
   * entries it took.
   */
  runNow(): number {
    let total = 0;
    for (let n = -1; n !== 0; total += n) n = this.writer.expireDue(this.store.now(), SLICE_ENTRIES);
    this.compactIfStale();
    return total;
  }

  /** Stops the timer and the slice to come. Idempotent. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.slice !== null) clearImmediate(this.slice);
    this.timer = null;
    this.slice = null;
  }

  private readonly tick = (): void => {
    if (this.slice !== null) return;
    if (this.store.expiries.next <= this.store.now()) this.runSlice();
    // Keys rewritten with long TTLs leave stale entries that come due late: drop them before they pile up.
    else this.compactIfStale();
  };

  private readonly runSlice = (): void => {
    this.slice = null;
    const deadline = performance.now() + SLICE_MS;
    const now = this.store.now();
    while (this.writer.expireDue(now, SLICE_ENTRIES) === SLICE_ENTRIES) {
      if (performance.now() < deadline) continue;
      // More are due: the next slice after the event loop has had its turn.
      this.slice = setImmediate(this.runSlice);
      this.slice.unref();
      return;
    }
    this.compactIfStale();
  };

  /**
   * Rebuilds the heap without its stale entries (rewritten, persisted or deleted keys) once they outnumber the keys
   * with an expiry, so that a map rewriting keys with TTLs keeps a heap the size of its expiring keys.
   */
  private compactIfStale(): void {
    const store = this.store;
    const heap = store.expiries;
    if (heap.size <= 1024 || heap.size <= 2 * store.expiring) return;
    heap.compact((expiresAt, loc) => store.holdsExpiry(loc, expiresAt));
  }
}
