/**
 * The change feed of a persisted map: its data writes (sets and deletes of keys, never its own metadata, the
 * named metadata of `map.meta` or image tags) with their engine sequence numbers, live as the engine commits them
 * (read after the write, `Engine.follow`) and read back from the WALs the engine still holds (`Engine.updatesSince`).
 * The KV server's watch is built on it. Sequence numbers are the engine's: ascending in commit order, with gaps where the engine
 * wrote something that is not a data write.
 */
import { type Engine, forEachUpdate, type UpdateBatch, type UpdateVisitor } from '@heapless/engine';
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

/** The engine visitor that passes the data writes on to `visit`, their keys without the namespace byte. */
function dataOnly(visit: ChangeVisitor): UpdateVisitor {
  return (seq, key, value) => {
    if (key.length > 0 && key[0] === NS_DATA) visit(seq, key.subarray(1), value && storedValueBytes(value));
  };
}

/** Calls `visit` with each data write of `batches` after sequence `after`, in commit order. */
function visitData(batches: readonly UpdateBatch[], after: number, visit: ChangeVisitor): void {
  forEachUpdate(batches, after, dataOnly(visit));
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
   * Calls `visit` with every data write applied from now on, in commit order without a gap or a repeat, from a
   * microtask after the write call (once per turn of writes), before it is durable: wait for `map.durable()` before
   * acting on it where a crash must not take back what was seen. Writes more than the engine keeps in memory for its
   * followers in one turn are read back from its WALs first. When they are gone too (or the engine fails or closes
   * while reading them), the subscription ends and `lost` is called with the reason. `visit` must not write to the
   * map; one that throws does not fail the write (its error is rethrown from a microtask) and the write it was given
   * counts as seen. Returns the function that stops it. Throws the engine's CLOSED.
   */
  subscribe(visit: ChangeVisitor, lost: (reason: string) => void = () => {}): () => void {
    const guarded: ChangeVisitor = (seq, key, value) => {
      try {
        visit(seq, key, value);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    };
    const data = dataOnly(guarded);
    /** Reading the WALs back now: the follower's wakes wait for it. */
    let catchingUp = false;
    let stopped = false;
    const stop = (): void => {
      stopped = true;
      follower.close();
    };
    const pull = (): void => {
      if (stopped || follower.read(data)) return;
      catchingUp = true;
      this.since(follower.position, guarded).then(
        (r) => {
          catchingUp = false;
          if (stopped) return;
          if (!r.ok) {
            stop();
            lost(r.reason);
            return;
          }
          follower.skipTo(r.through);
          pull();
        },
        (err: unknown) => {
          catchingUp = false;
          if (stopped) return;
          stop();
          lost(err instanceof Error ? err.message : String(err));
        },
      );
    };
    const follower = this.#engine.follow(() => {
      if (!catchingUp) pull();
    });
    return stop;
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
