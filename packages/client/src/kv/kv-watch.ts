/**
 * The shapes of the KV actor's watch (FORMAT.md, "KV watch"), shared by the server that pushes the changes and the
 * clients that read them.
 */

/** Options of a KV `watch`. */
export interface KvWatchOptions {
  /**
   * Start after this engine sequence: the changes after it that the store still keeps are pushed first, then the
   * live ones. Give the last sequence received to resume a watch with neither a gap nor a duplicate, or the
   * `sequence` of a batch's answer to see everything after it. Absent: live changes from now on. A sequence whose
   * changes are no longer kept is refused with `SEQUENCE_GONE`.
   */
  fromSequence?: number;
}

/**
 * One change pushed by a KV watch: the engine sequence of the write (ascending in commit order, with gaps where the
 * store wrote something else), the key, and the value's bytes as stored, or null for a delete.
 */
export type KvChange = [sequence: number, key: string, value: Uint8Array | null];

/** What a KV `watch` answers before its changes: the stream's id and the store's last sequence then. */
export interface KvWatchHead {
  stream: number;
  /** Every change after `fromSequence` up to this one comes first (from the store's log); live ones follow. */
  sequence: number;
}
