/**
 * The engine's memtables: the live one, which writes go to, and the frozen ones waiting for their flush, oldest
 * first, each with the number of the WAL that holds its writes (0 without a WAL). Reads look at the live memtable,
 * then the frozen ones newest first.
 *
 * It also keeps what lets memtables recycle memory: the arenas of a flushed memtable that nothing reads any more go
 * to the next live memtable, and the buffers of the last flush's copy, moved back by the worker, to the next copy.
 */
import type { InternalIterator } from '../base/internal-iterator.js';
import { ValueKind } from '../base/internal-key.js';
import { LookupResult, Memtable, type SharedArenas, type SharedMemtable } from '../memtable/memtable.js';
import { type BatchHandler, batchSequence, replayBatch } from './write-batch.js';

/** A record of the live WAL that recovery checked but has not inserted yet (open.ts), with where it was read. */
export interface PendingRecord {
  readonly rep: Uint8Array;
  readonly path: string;
  readonly offset: number;
}

/**
 * The batch handler that adds each replayed entry to the memtable `target()` names at that moment (the write path's
 * live one, recovery's current one), for `replayBatch`.
 */
export function insertInto(target: () => Memtable): BatchHandler {
  return {
    put: (buf, ks, kl, vs, vl, seq) => target().add(seq, ValueKind.Value, buf, ks, kl, buf, vs, vl),
    del: (buf, ks, kl, seq) => target().add(seq, ValueKind.Deletion, buf, ks, kl, buf, 0, 0),
  };
}

/** Bytes of pending WAL records inserted per background step after an open (about 1 ms of inserts, optimised). */
const PENDING_STEP_BYTES = 64 * 1024;

/** A frozen memtable, the WAL holding its writes, and the sequence of its first write. */
export interface Frozen {
  readonly mem: Memtable;
  readonly log: number;
  readonly first: number;
}

export class MemtableSet {
  #live: Memtable;
  /** Records still to insert into the live memtable, from `#next` on (see open.ts); empty once all are in. */
  #pending: readonly PendingRecord[];
  #next = 0;
  /** What inserting a pending record threw: thrown again at every use of the live memtable. */
  #failure: unknown;
  readonly #handler = insertInto(() => this.#live);
  readonly #cursor = new Int32Array(1);
  /** The WAL holding the live memtable's writes (0 without a WAL). */
  liveLog: number;
  /**
   * The sequence of the live memtable's first write, from its rotation in (0 for the memtable an open starts with,
   * whose first write nothing needs: a flush freezes it before `flushedThrough` is asked).
   */
  #liveFirst = 0;
  /** Frozen memtables, oldest first. */
  private readonly frozen: Frozen[] = [];
  /** A flushed memtable nothing reads any more, whose arenas the next memtable takes over. */
  private spare: Memtable | undefined;
  /** Buffers of the last flush's memtable copy, moved back by the worker, for the next copy. */
  private copyArenas: SharedArenas | undefined;
  /** The memtable the last `get` ended in. */
  found: Memtable;

  /**
   * Starts with `live` (what recovery replayed, or an empty memtable) on log `liveLog`, and the records of that log
   * still to insert into it (`pending`, none by default): inserted at the first use of the live memtable, or before by
   * `insertPending` steps.
   */
  constructor(live: Memtable, liveLog: number, pending: readonly PendingRecord[] = []) {
    this.#live = live;
    this.liveLog = liveLog;
    this.found = live;
    this.#pending = pending;
  }

  /** The memtable writes go to, every pending record in it. Throws what inserting one threw (CorruptionError). */
  get live(): Memtable {
    if (this.#next < this.#pending.length) this.insertPending(Number.POSITIVE_INFINITY);
    return this.#live;
  }

  set live(mem: Memtable) {
    this.#live = mem;
  }

  /** Whether records recovery read wait to be inserted into the live memtable. */
  get pendingRecords(): number {
    return this.#pending.length - this.#next;
  }

  /**
   * Inserts pending records, about `maxBytes` of them (at least one), into the live memtable; returns whether any
   * are left. Throws what an insert threw, now and at every later use of the live memtable.
   */
  insertPending(maxBytes: number): boolean {
    if (this.#failure !== undefined) throw this.#failure;
    const pending = this.#pending;
    let done = 0;
    try {
      while (this.#next < pending.length && done < maxBytes) {
        const { rep, path, offset } = pending[this.#next]!;
        replayBatch(rep, rep.length, batchSequence(rep), this.#handler, this.#cursor, path, offset);
        this.#next++;
        done += rep.length;
      }
    } catch (err) {
      this.#failure = err;
      throw err;
    }
    if (this.#next < pending.length) return true;
    this.#pending = [];
    this.#next = 0;
    return false;
  }

  /** The next background step of `insertPendingSoon`, while one is due. */
  #step: NodeJS.Immediate | undefined;

  /**
   * Inserts the pending records in the background, about PENDING_STEP_BYTES of them per turn of the event loop: the
   * memtable is complete soon after the open without blocking what runs meanwhile; a use of the live memtable before
   * that completes it at once. A failure (a malformed batch behind a good checksum) is the error of every later use
   * of the live memtable. `stopPendingInserts` cancels the next step.
   */
  insertPendingSoon(): void {
    this.#step ??= setImmediate(this.#insertStep);
  }

  /** Cancels the next background step of `insertPendingSoon` (the records left are inserted at the next use). */
  stopPendingInserts(): void {
    if (this.#step !== undefined) clearImmediate(this.#step);
    this.#step = undefined;
  }

  readonly #insertStep = (): void => {
    this.#step = undefined;
    let more = false;
    try {
      more = this.insertPending(PENDING_STEP_BYTES);
    } catch {
      return;
    }
    if (more) this.#step = setImmediate(this.#insertStep);
  };

  /**
   * Makes `memtables` (oldest first) the whole set: the last one live, the others frozen. For readers of another
   * process's WALs (live-view.ts), which never write or flush: an empty list leaves an empty live memtable.
   */
  replaceAll(memtables: readonly Memtable[]): void {
    this.frozen.length = 0;
    for (let i = 0; i < memtables.length - 1; i++) this.frozen.push({ mem: memtables[i]!, log: 0, first: 0 });
    this.live = memtables[memtables.length - 1] ?? new Memtable(0);
    this.found = this.live;
  }

  /** Frozen memtables waiting for their flush. */
  get frozenCount(): number {
    return this.frozen.length;
  }

  /** Bytes of the live memtable and of the frozen ones (of the records inserted so far: a figure inserts nothing). */
  get memoryUsage(): number {
    let n = this.#live.memoryUsage;
    for (const f of this.frozen) n += f.mem.memoryUsage;
    return n;
  }

  /**
   * Freezes the live memtable, unless it is empty, and makes a new one of `capacity` bytes live, its writes going to
   * log `log` (only once the caller has rotated the WAL; without a WAL, 0) from sequence `first` on.
   */
  rotate(capacity: number, log: number, first: number): void {
    if (this.live.count > 0) this.frozen.push({ mem: this.live, log: this.liveLog, first: this.#liveFirst });
    this.liveLog = log;
    this.#liveFirst = first;
    const spare = this.spare;
    this.spare = undefined;
    this.live = new Memtable(capacity, undefined, spare);
  }

  /**
   * The last sequence up to which every write is in a table: the one before the oldest unflushed memtable's first
   * write, or `last` (the engine's last sequence) when no memtable holds a write.
   */
  flushedThrough(last: number): number {
    const oldest = this.frozen[0]?.first ?? (this.live.count > 0 ? this.#liveFirst : last + 1);
    return oldest - 1;
  }

  /** The oldest frozen memtable: the next to flush. */
  oldestFrozen(): Frozen | undefined {
    return this.frozen[0];
  }

  /** A copy of the oldest frozen memtable's arenas, for the flush worker (it reuses the last copy's buffers). */
  copyOldest(): SharedMemtable {
    const arenas = this.copyArenas;
    this.copyArenas = undefined;
    return this.frozen[0]!.mem.share(arenas);
  }

  /** The oldest WAL still needed once the oldest frozen memtable is in a table: the next frozen one's, or the live one's. */
  logAfterOldest(): number {
    return this.frozen[1]?.log ?? this.liveLog;
  }

  /**
   * The oldest frozen memtable is in a table: forgets it, keeping its arenas for the next memtable unless an
   * iterator still reads them. `arenas`: the buffers the flush worker moved back.
   */
  retireOldest(arenas: SharedArenas | undefined): void {
    const f = this.frozen.shift()!;
    if (arenas !== undefined) this.copyArenas = arenas;
    if (!f.mem.inUse) this.spare = f.mem;
  }

  /** The WALs the memtables' writes are in, oldest first (with a WAL). */
  logs(): number[] {
    return [...this.frozen.map((f) => f.log), this.liveLog];
  }

  /**
   * Looks the user key `k` up as of `seq` (`hash`: its bloomHash) in the memtables, newest first: NotFound when none
   * holds it; else Value or Deleted for the newest entry, and for a Value, `found` is the memtable whose
   * `valueOffset`/`valueLength` locate it (no copy made: the caller copies what it keeps).
   */
  get(k: Uint8Array, seq: number, hash: number): LookupResult {
    let mem = this.live;
    let r = mem.get(k, 0, k.length, seq, hash);
    for (let i = this.frozen.length - 1; r === LookupResult.NotFound && i >= 0; i--) {
      mem = this.frozen[i]!.mem;
      r = mem.get(k, 0, k.length, seq, hash);
    }
    this.found = mem;
    return r;
  }

  /** Cursors over every memtable, newest first; each pins its memtable until closed. */
  iterators(): InternalIterator[] {
    const out: InternalIterator[] = [this.live.iterator()];
    for (let i = this.frozen.length - 1; i >= 0; i--) out.push(this.frozen[i]!.mem.iterator());
    return out;
  }
}
