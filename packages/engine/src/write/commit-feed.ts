/**
 * The engine's change feed, pulled (as RocksDB's `GetUpdatesSince` iterator, or an LMDB reader, which read what was
 * committed rather than being called by the writer): the write path only records each batch it commits, copied into
 * a buffer of recent commits, and only while someone follows; followers are woken once per turn in which something
 * was committed (from a microtask, never inside the write call) and read what they have not seen through their own
 * cursor. A follower that fell behind the buffer reads the rest back from the WALs (`Engine.updatesSince`) and goes
 * on from where that answer ends.
 *
 * Memory: the buffer is pages of at least PAGE_BYTES written once each (a batch is never split), bounded by what
 * its pages and their index allocate (RECENT_COMMIT_BYTES, but always the newest page): pages every follower has
 * read are dropped, the last one reused in place once all of it has been read.
 */
import { closedError } from '../base/errors.js';
import type { UpdateVisitor } from './updates-since.js';
import { type BatchHandler, batchCount, replayBatch } from './write-batch.js';

/** The smallest page of the buffer: a write of 100 bytes to a key fills it in about 600 writes. */
const PAGE_BYTES = 64 * 1024;
/**
 * Memory the buffer of recent commits may hold: 8 MiB, about 70k writes of 100-byte values committed in one turn
 * before a follower must read the WALs back instead.
 */
export const RECENT_COMMIT_BYTES = 8 * 1024 * 1024;
/** Index memory per batch held: its start and its sequence, one array slot each. */
const INDEX_BYTES = 16;

/** A page of the buffer: batches `bytes[starts[i], starts[i + 1] or used)` numbered from `sequences[i]`. */
interface Page {
  readonly bytes: Uint8Array;
  used: number;
  readonly starts: number[];
  readonly sequences: number[];
  /** The sequence of the last write of the page's last batch. */
  last: number;
}

/** One follower of the feed (`Engine.follow`): a cursor over the commits after `position`. */
export interface CommitFollower {
  /** The sequence of the last write read: the engine's last sequence when following began, then the last read. */
  readonly position: number;
  /**
   * Calls `visit` with each write committed after `position`, in commit order, and moves `position` to the last one;
   * returns true. Returns false, visiting nothing, when the buffer of recent commits no longer holds the first of
   * them: read those with `Engine.updatesSince(position)`, then `skipTo` the last sequence they reached, and read on.
   * The views `visit` gets are valid during its call only; `visit` must not write to the engine. A write whose
   * `visit` throws counts as read (the error is thrown from `read`). After `close`, or the engine's, visits nothing.
   */
  read(visit: UpdateVisitor): boolean;
  /** Moves `position` forward to `sequence` (the writes up to it were read elsewhere); never back. */
  skipTo(sequence: number): void;
  /** Stops following: the follower is no longer woken and holds no commit in memory. Idempotent. */
  close(): void;
}

export class CommitFeed {
  private readonly followers = new Set<Follower>();
  private readonly pages: Page[] = [];
  /** Bytes the pages and their index allocate. */
  private held = 0;
  /** Every write after this sequence, through `last`, is in the pages. */
  private covered = 0;
  /** The sequence of the last write committed (as recorded, or when following began). */
  private last = 0;
  private waking = false;
  private closed = false;
  private readonly maxBytes: number;
  private readonly wakeAll = (): void => this.wake();

  constructor(maxBytes = RECENT_COMMIT_BYTES) {
    this.maxBytes = maxBytes;
  }

  /** True while someone follows: the write path records its commits only then. */
  get following(): boolean {
    return this.followers.size > 0;
  }

  /** Followers now. */
  get size(): number {
    return this.followers.size;
  }

  /**
   * A follower from `lastSequence` (the engine's now) on, woken by `wake` once per turn in which writes were
   * committed; see `Engine.follow`. Throws EngineError CLOSED once the feed is closed.
   */
  follow(lastSequence: number, wake: () => void, location: string): CommitFollower {
    if (this.closed) throw closedError(`engine ${location}`);
    if (this.followers.size === 0) this.covered = this.last = lastSequence;
    const f = new Follower(this, lastSequence, wake);
    this.followers.add(f);
    return f;
  }

  /** Records a batch just committed: `rep[0, length)` holding `count` writes from `sequence`. */
  record(rep: Uint8Array, length: number, sequence: number, count: number): void {
    let page = this.pages[this.pages.length - 1];
    if (page === undefined || page.bytes.length - page.used < length) {
      const bytes = new Uint8Array(Math.max(PAGE_BYTES, length));
      page = { bytes, used: 0, starts: [], sequences: [], last: 0 };
      this.pages.push(page);
      this.held += bytes.byteLength;
    }
    page.bytes.set(rep.subarray(0, length), page.used);
    page.starts.push(page.used);
    page.sequences.push(sequence);
    page.used += length;
    page.last = this.last = sequence + count - 1;
    this.held += INDEX_BYTES;
    while (this.held > this.maxBytes && this.pages.length > 1) this.dropFirst();
    if (!this.waking) {
      this.waking = true;
      queueMicrotask(this.wakeAll);
    }
  }

  /** Stops recording: followers read nothing more; later `follow` calls throw CLOSED. */
  close(): void {
    this.closed = true;
    this.followers.clear();
    this.clear();
  }

  /** See `CommitFollower.read`. */
  read(f: Follower, visit: UpdateVisitor): boolean {
    if (this.closed || !this.followers.has(f)) return true;
    if (f.position < this.covered) return false;
    const handler = f.handler(visit);
    const cursor = f.cursor;
    try {
      for (const page of this.pages) {
        if (page.last <= f.position) continue;
        const { starts, sequences, bytes } = page;
        for (let i = 0; i < starts.length; i++) {
          const end = i + 1 < starts.length ? starts[i + 1]! : page.used;
          const batch = bytes.subarray(starts[i]!, end);
          if (sequences[i]! + batchCount(batch) - 1 <= f.position) continue;
          replayBatch(batch, batch.length, sequences[i]!, handler, cursor, 'recent commit', 0);
        }
      }
    } finally {
      this.trim();
    }
    return true;
  }

  /** A follower stopped. */
  remove(f: Follower): void {
    if (!this.followers.delete(f)) return;
    if (this.followers.size === 0) this.clear();
    else this.trim();
  }

  /** Drops the pages every follower has read; the last one is emptied for reuse once read to its end. */
  private trim(): void {
    let min = this.last;
    for (const f of this.followers) if (f.position < min) min = f.position;
    while (this.pages.length > 1 && this.pages[0]!.last <= min) this.dropFirst();
    const page = this.pages[0];
    if (page !== undefined && page.last <= min) {
      this.held -= page.starts.length * INDEX_BYTES;
      page.used = page.starts.length = page.sequences.length = 0;
      this.covered = page.last;
    }
  }

  private dropFirst(): void {
    const page = this.pages.shift()!;
    this.held -= page.bytes.byteLength + page.starts.length * INDEX_BYTES;
    this.covered = page.last;
  }

  private clear(): void {
    this.pages.length = 0;
    this.held = 0;
  }

  /** Wakes every follower; one that throws wakes the others, its error rethrown from a microtask of its own. */
  private wake(): void {
    this.waking = false;
    for (const f of [...this.followers]) {
      try {
        f.wake();
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}

class Follower implements CommitFollower {
  position: number;
  readonly wake: () => void;
  readonly cursor = new Int32Array(1);
  private readonly feed: CommitFeed;
  private visit: UpdateVisitor = () => {};
  private readonly batchHandler: BatchHandler = {
    put: (buf, ks, kl, vs, vl, seq) => {
      if (seq <= this.position) return;
      this.position = seq;
      this.visit(seq, buf.subarray(ks, ks + kl), buf.subarray(vs, vs + vl));
    },
    del: (buf, ks, kl, seq) => {
      if (seq <= this.position) return;
      this.position = seq;
      this.visit(seq, buf.subarray(ks, ks + kl), undefined);
    },
  };

  constructor(feed: CommitFeed, position: number, wake: () => void) {
    this.feed = feed;
    this.position = position;
    this.wake = wake;
  }

  /** The batch handler that passes the writes after `position` to `visit`. */
  handler(visit: UpdateVisitor): BatchHandler {
    this.visit = visit;
    return this.batchHandler;
  }

  read(visit: UpdateVisitor): boolean {
    return this.feed.read(this, visit);
  }

  skipTo(sequence: number): void {
    if (sequence > this.position) this.position = sequence;
  }

  close(): void {
    this.feed.remove(this);
  }
}
