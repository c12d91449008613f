/**
 * The cursor every sorted source of internal keys offers: memtable, data block, table, level, merged view.
 * Positioned cursors, LevelDB style, so merging and seeking allocate nothing per step.
 *
 * Ownership: `key()` and `value()` return views that stay valid only until the cursor moves again; a caller that
 * keeps one must copy it (`slice()`). The value's place (`valueBuffer`, `valueOffset`) stays valid longer. A cursor that holds resources (a pinned block, a file) frees them in `close()`.
 */
export interface InternalIterator {
  /** True while the cursor is on an entry. */
  valid(): boolean;
  seekToFirst(): void;
  seekToLast(): void;
  /** Moves to the first entry whose internal key is >= `target` (an internal key) in internal-key order. */
  seek(target: Uint8Array): void;
  /** Requires `valid()`. */
  next(): void;
  /** Requires `valid()`. */
  prev(): void;
  /** The current internal key (user key ++ 8-byte trailer). Requires `valid()`. */
  key(): Uint8Array;
  /** The current value. Requires `valid()`. */
  value(): Uint8Array;
  /**
   * The current value lives in `valueBuffer()[valueOffset()..valueOffset() + valueLength())`. Requires `valid()`.
   * Unlike `value()`, this makes no view, so that bulk reads copy values out without allocating; and unlike a
   * `value()` view, these bytes do not change when the cursor moves (every source is immutable: table blocks, and
   * memtable arenas, which the cursor pins), for as long as the caller keeps the buffer.
   */
  valueBuffer(): Uint8Array;
  valueOffset(): number;
  valueLength(): number;
  /** Releases what the cursor holds. Idempotent. */
  close(): void;
}
