/**
 * The expiry index: a binary min-heap of (expiresAt, location) pairs in one growable Float64Array, so that a million
 * keys with an expiry cost 16 MB off the JS heap and no JS object each (FORMAT.md §13).
 *
 *   entries[2i]      expiresAt, ms since the epoch
 *   entries[2i + 1]  the arena location (§2) of the record that had that expiry when the entry was pushed
 *
 * Entries are never updated or removed in place: a record rewritten, persisted, moved or deleted leaves its entry,
 * and whoever pops an entry checks it against the record now at its location (lazy deletion).
 */
const INITIAL_ENTRIES = 1024;

export class ExpiryHeap {
  private entries = new Float64Array(INITIAL_ENTRIES * 2);
  private n = 0;

  /** Entries in the heap, stale ones included. */
  get size(): number {
    return this.n;
  }

  /** Bytes of the heap's array. */
  get bytes(): number {
    return this.entries.byteLength;
  }

  /** The earliest expiresAt in the heap (Infinity when empty). */
  get next(): number {
    return this.n === 0 ? Number.POSITIVE_INFINITY : this.entries[0]!;
  }

  /** The location of the earliest entry (call only when not empty). */
  get nextLocation(): number {
    return this.entries[1]!;
  }

  push(expiresAt: number, loc: number): void {
    if ((this.n + 1) * 2 > this.entries.length) {
      const grown = new Float64Array(this.entries.length * 2);
      grown.set(this.entries);
      this.entries = grown;
    }
    const e = this.entries;
    let i = this.n++;
    while (i > 0) {
      const parent = (i - 1) >>> 1;
      if (e[parent * 2]! <= expiresAt) break;
      e[i * 2] = e[parent * 2]!;
      e[i * 2 + 1] = e[parent * 2 + 1]!;
      i = parent;
    }
    e[i * 2] = expiresAt;
    e[i * 2 + 1] = loc;
  }

  /** Removes the earliest entry (call only when not empty). */
  pop(): void {
    const e = this.entries;
    const last = --this.n;
    const t = e[last * 2]!;
    const loc = e[last * 2 + 1]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      if (child + 1 < last && e[(child + 1) * 2]! < e[child * 2]!) child++;
      if (e[child * 2]! >= t) break;
      e[i * 2] = e[child * 2]!;
      e[i * 2 + 1] = e[child * 2 + 1]!;
      i = child;
    }
    e[i * 2] = t;
    e[i * 2 + 1] = loc;
  }

  /**
   * Keeps only the entries for which `keep(expiresAt, loc)` holds (dropping stale ones), and rebuilds the heap; the
   * array shrinks to fit them.
   */
  compact(keep: (expiresAt: number, loc: number) => boolean): void {
    const e = this.entries;
    let m = 0;
    for (let i = 0; i < this.n; i++) {
      if (!keep(e[i * 2]!, e[i * 2 + 1]!)) continue;
      e[m * 2] = e[i * 2]!;
      e[m * 2 + 1] = e[i * 2 + 1]!;
      m++;
    }
    const kept = e.slice(0, m * 2);
    this.entries = new Float64Array(Math.max(INITIAL_ENTRIES, m * 2) * 2);
    this.n = 0;
    for (let i = 0; i < m; i++) this.push(kept[i * 2]!, kept[i * 2 + 1]!);
  }
}
