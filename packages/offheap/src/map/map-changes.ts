/**
 * The change feed of a persisted map: its data writes (sets and deletes of keys, never its own metadata, the
 * named metadata of `map.meta` or image tags) with their engine sequence numbers, live as the engine commits them
 * (`Engine.onCommit`) and read back from the WALs the engine still holds (`Engine.updatesSince`). The KV server's
 * watch is built on it. Sequence numbers are the engine's: ascending in commit order, with gaps where the engine
 * wrote something that is not a data write.
 */
import { type Engine, forEachUpdate, type UpdateBatch } from '@heapless/engine';
import { NS_DATA } from '../persist/persistence.js';
import { storedValueBytes } from '../persist/stored-value.js';

/**
 * Receives one data write: `key` the map key's bytes (UTF-8 for a string-keyed map), `value` the stored bytes, or
 * undefined for a delete. Both are views valid during the call only.
 */
export type ChangeVisitor = (sequence: number, key: Uint8Array, value: Uint8Array | undefined) => void;

/** What `MapChanges.since` answers: the writes were visited, through `through`; or why they cannot be had. */
export type ChangesSince =
  | { readonly ok: true; readonly through: number }
  | { readonly ok: false; readonly reason: string };

/** Calls `visit` with each data write of `batches` after sequence `after`, in commit order. */
function visitData(batches: readonly UpdateBatch[], after: number, visit: ChangeVisitor): void {
  forEachUpdate(batches, after, (seq, key, value) => {
    if (key.length > 0 && key[0] === NS_DATA) visit(seq, key.subarray(1), value && storedValueBytes(value));
  });
}

/** A persisted map's change feed (`map.changes`); see the top of the file. */
export class MapChanges {
  readonly #engine: Engine;

  constructor(engine: Engine) {
    this.#engine = engine;
  }

  /** The engine sequence of the last write applied (data or not). */
  get lastSequence(): number {
    return this.#engine.lastSequence;
  }

  /**
   * Calls `visit` with every data write applied from now on, inside the write call (before it is durable: wait
   * for `map.durable()` before acting on it where a crash must not take back what was seen), in commit order.
   * `visit` must not write to the map. Returns the function that stops it. Throws the engine's CLOSED.
   */
  subscribe(visit: ChangeVisitor): () => void {
    return this.#engine.onCommit((b) => visitData([b], 0, visit));
  }

  /**
   * Calls `visit` with each data write after sequence `after` through the last one applied when it was called
   * (`lastSequence` then), read back from the WALs the engine still has, in commit order; every one of them has
   * been handed to the OS. Answers `{ ok: false, reason }` (and visits nothing) when the engine no longer has all of
   * them (its logs were deleted once their data was in tables, past what the map's image pins) or `after` is beyond
   * its last sequence. Rejects with the engine's CLOSED; throws its CorruptionError for a damaged batch.
   */
  async since(after: number, visit: ChangeVisitor): Promise<ChangesSince> {
    const through = this.#engine.lastSequence;
    if (after > through) return { ok: false, reason: `sequence ${after} is past the last one, ${through}` };
    const r = await this.#engine.updatesSince(after);
    if (!r.ok) return r;
    visitData(r.batches, after, (seq, key, value) => {
      if (seq <= through) visit(seq, key, value);
    });
    return { ok: true, through };
  }
}
