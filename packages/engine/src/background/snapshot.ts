/**
 * Snapshots: a pinned sequence number. Reads through a snapshot see the database as of its creation; compaction
 * keeps every version a live snapshot can see (it drops only versions hidden below the oldest snapshot).
 */
import { invalidArgument } from '../base/errors.js';

export class Snapshot {
  /** Reads see writes with sequence <= this. */
  readonly sequence: number;
  private readonly list: SnapshotList;
  private live = true;

  /** Made by `engine.snapshot()`. */
  constructor(sequence: number, list: SnapshotList) {
    this.sequence = sequence;
    this.list = list;
  }

  /** True until `release()`. */
  get released(): boolean {
    return !this.live;
  }

  /** Lets compaction drop what only this snapshot could see. Idempotent. */
  release(): void {
    if (!this.live) return;
    this.live = false;
    this.list.remove(this);
  }

  /** @internal Throws HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT if released or made by another engine. */
  check(list: SnapshotList): number {
    if (this.list !== list) throw invalidArgument('snapshot belongs to another engine');
    if (!this.live) throw invalidArgument('snapshot was released');
    return this.sequence;
  }
}

/** The live snapshots of one engine, oldest first (sequence numbers only grow, so insertion order is age order). */
export class SnapshotList {
  private readonly live = new Set<Snapshot>();

  create(sequence: number): Snapshot {
    const s = new Snapshot(sequence, this);
    this.live.add(s);
    return s;
  }

  remove(s: Snapshot): void {
    this.live.delete(s);
  }

  /** The oldest live snapshot's sequence, or `fallback` when there is none. */
  oldest(fallback: number): number {
    for (const s of this.live) return s.sequence;
    return fallback;
  }

  get size(): number {
    return this.live.size;
  }

  /** Releases every snapshot (engine close). */
  releaseAll(): void {
    for (const s of [...this.live]) s.release();
  }
}
