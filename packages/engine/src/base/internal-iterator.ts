/**
 * The cursor every sorted source of internal keys offers: memtable, data block, table, level, merged view.
 * Positioned cursors, LevelDB style, so merging and seeking allocate nothing per step.
 *
 * Ownership: `key()` and `value()` return views that stay valid only until the cursor moves again; a caller that
 * keeps one must copy it (`slice()`). A cursor that holds resources (a pinned block, a file) frees them in `close()`.
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
  /** Bytes of the current value. Requires `valid()`. */
  valueLength(): number;
  /**
   * Copies the current value into `target` at `at` (the caller made room for `valueLength()` bytes). Requires
   * `valid()`. Unlike `value()`, makes no view: bulk reads copy values through it without allocating.
   */
  copyValueInto(target: Uint8Array, at: number): void;
  /** Releases what the cursor holds. Idempotent. */
  close(): void;
}
