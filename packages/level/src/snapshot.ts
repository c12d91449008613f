/**
 * Explicit snapshots (`db.snapshot()`): an abstract-level token around an engine snapshot, a pinned sequence
 * number. Reads given `{ snapshot }` see the database as of its creation; compaction keeps what it can see until
 * `close()` releases it (the database's close releases any left open).
 */
import type { ReadOptions, Snapshot } from '@heapless/engine';
import { AbstractSnapshot } from 'abstract-level';

/**
 * abstract-level's typings leave out the constructor that implementations call; at run time it takes `{ owner }`,
 * the database (or sublevel) that closes the snapshot when it closes.
 */
const SnapshotBase = AbstractSnapshot as unknown as new (options: { owner: object }) => AbstractSnapshot;

/** Made by `db.snapshot()`; pass it as `{ snapshot }` to reads, then `close()` it. */
export class HeaplessSnapshot extends SnapshotBase {
  /** The engine's read options for this snapshot, made once so that reads through it allocate nothing. */
  readonly readOptions: Readonly<ReadOptions>;
  /** @internal The engine's snapshot, for iterators. */
  readonly engineSnapshot: Snapshot;

  /** @internal The engine snapshot must exist already: it is taken synchronously, when `db.snapshot()` is called. */
  constructor(options: { owner: object }, snapshot: Snapshot) {
    super(options);
    this.engineSnapshot = snapshot;
    this.readOptions = Object.freeze({ snapshot });
  }

  /** @internal abstract-level calls it once, after the last read that used the snapshot. */
  async _close(): Promise<void> {
    this.engineSnapshot.release();
  }
}
