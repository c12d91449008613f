/**
 * The public iterator: a range of the user's view (bounds, direction, limit) over a consistent version, as of one
 * sequence number. It reads synchronously inside; the promise-returning methods resolve at once. `nextv(n)` returns
 * up to `n` entries in one array, so a scan pays one promise per batch rather than per entry.
 *
 * Ownership: an iterator pins the tables and memtables it reads until `close()` (or the end of a `for await`, or the
 * engine's close). Keys and values handed out are copies the caller owns.
 */

import type { Snapshot } from '../background/snapshot.js';
import { writeU32LE } from '../base/coding.js';
import { closedError, invalidArgument } from '../base/errors.js';
import { compareBytes } from '../base/internal-key.js';
import type { DbIterator } from '../iterator/db-iterator.js';
import { type Bytes, checkKeyString } from '../write/write-batch.js';

/** Options of `engine.iterator()`. Bounds are keys (bytes, or strings as UTF-8). */
export interface IteratorOptions {
  /** Lower bound, exclusive. Ignored when `gte` is given too (as in abstract-level). */
  gt?: Bytes;
  /** Lower bound, inclusive. */
  gte?: Bytes;
  /** Upper bound, exclusive. Ignored when `lte` is given too (as in abstract-level). */
  lt?: Bytes;
  /** Upper bound, inclusive. */
  lte?: Bytes;
  /** Walk from the last key to the first. Default false. */
  reverse?: boolean;
  /** At most this many entries (all when negative or absent). */
  limit?: number;
  /** Read as of this snapshot rather than the iterator's creation. */
  snapshot?: Snapshot;
  /** False: entries carry an empty key (no copy made). Default true. */
  keys?: boolean;
  /** False: entries carry an empty value (no copy made). Default true. */
  values?: boolean;
  /**
   * Put the table blocks this iterator reads from disk into the block cache. Default true. Pass false for one-pass
   * scans (a full scan, a bulk load), so that they neither pay a copy per block nor evict what point reads use.
   */
  fillCache?: boolean;
}

/** Bytes of an entry's header in `nextvInto`'s output: key length and value length, u32 little-endian each. */
export const ENTRY_HEADER_SIZE = 8;

/** One entry: a key and its value, both owned by the caller. */
export type Entry = [key: Uint8Array, value: Uint8Array];

const EMPTY = new Uint8Array(0);

function toBytes(b: Bytes, what: string): Uint8Array {
  if (typeof b === 'string') {
    checkKeyString(b, what);
    return Buffer.from(b, 'utf8');
  }
  if (b instanceof Uint8Array) return b;
  throw invalidArgument(`${what} must be a Uint8Array or a string`);
}

export class EngineIterator implements AsyncIterable<Entry> {
  private readonly db: DbIterator;
  private readonly onClose: (it: EngineIterator) => void;
  private readonly lower: Uint8Array | undefined;
  private readonly lowerExclusive: boolean;
  private readonly upper: Uint8Array | undefined;
  private readonly upperExclusive: boolean;
  private readonly reverse: boolean;
  private readonly limit: number;
  private readonly keys: boolean;
  private readonly values: boolean;
  private count = 0;
  private positioned = false;
  /** The cursor sits on an entry not yet returned (after a seek). */
  private pending = false;
  private closed = false;

  /** Made by `engine.iterator()`. Throws HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT for bad options. */
  constructor(db: DbIterator, options: IteratorOptions, onClose: (it: EngineIterator) => void) {
    this.db = db;
    this.onClose = onClose;
    // Given both, the inclusive bound wins (`gte` over `gt`, `lte` over `lt`), as in abstract-level.
    this.lowerExclusive = options.gte === undefined && options.gt !== undefined;
    const lower = options.gte ?? options.gt;
    this.lower = lower === undefined ? undefined : toBytes(lower, 'gt/gte');
    this.upperExclusive = options.lte === undefined && options.lt !== undefined;
    const upper = options.lte ?? options.lt;
    this.upper = upper === undefined ? undefined : toBytes(upper, 'lt/lte');
    this.reverse = options.reverse === true;
    const limit = options.limit ?? -1;
    if (typeof limit !== 'number' || Number.isNaN(limit)) throw invalidArgument('limit must be a number');
    this.limit = limit < 0 ? Number.POSITIVE_INFINITY : limit;
    this.keys = options.keys !== false;
    this.values = options.values !== false;
  }

  private startAt(target: Uint8Array | undefined): void {
    const db = this.db;
    this.positioned = true;
    if (!this.reverse) {
      let from = this.lower;
      let exclusive = this.lowerExclusive;
      if (target !== undefined && (from === undefined || compareBytes(target, from) > 0)) {
        from = target;
        exclusive = false;
      }
      if (from === undefined) db.seekToFirst();
      else {
        db.seek(from);
        if (exclusive && db.valid() && db.compareKey(from) === 0) db.next();
      }
    } else {
      let from = this.upper;
      let exclusive = this.upperExclusive;
      if (target !== undefined && (from === undefined || compareBytes(target, from) < 0)) {
        from = target;
        exclusive = false;
      }
      if (from === undefined) db.seekToLast();
      else {
        db.seekForPrev(from);
        if (exclusive && db.valid() && db.compareKey(from) === 0) db.prev();
      }
    }
  }

  /** Moves onto the next entry to return: the first one, the one a seek found, or the one after the last returned. */
  private advance(): void {
    if (!this.positioned) this.startAt(undefined);
    else if (this.pending) this.pending = false;
    else if (this.db.valid()) {
      if (this.reverse) this.db.prev();
      else this.db.next();
    }
  }

  /** True if the cursor's key is past the far bound. */
  private beyond(): boolean {
    if (!this.reverse) {
      if (this.upper === undefined) return false;
      const c = this.db.compareKey(this.upper);
      return this.upperExclusive ? c >= 0 : c > 0;
    }
    if (this.lower === undefined) return false;
    const c = this.db.compareKey(this.lower);
    return this.lowerExclusive ? c <= 0 : c < 0;
  }

  private check(): void {
    if (this.closed) throw closedError('iterator');
  }

  /**
   * The next entry, or undefined at the end. Synchronous. Throws EngineError CLOSED after close, CorruptionError from
   * the tables.
   */
  nextSync(): Entry | undefined {
    this.check();
    const db = this.db;
    this.advance();
    if (!db.valid() || this.count >= this.limit || this.beyond()) return undefined;
    this.count++;
    return [this.keys ? db.keyCopy() : EMPTY, this.values ? db.value().slice() : EMPTY];
  }

  /** Up to `n` next entries (an empty array at the end), read synchronously. Throws as `nextSync`. */
  nextvSync(n: number): Entry[] {
    this.check();
    const out: Entry[] = [];
    const db = this.db;
    const keys = this.keys;
    const values = this.values;
    this.advance();
    const reverse = this.reverse;
    while (out.length < n) {
      if (!db.valid() || this.count >= this.limit || this.beyond()) break;
      this.count++;
      const key = keys || !reverse ? db.keyCopy() : EMPTY;
      out.push([keys ? key : EMPTY, values ? db.value().slice() : EMPTY]);
      if (out.length === n) break;
      if (reverse) db.prev();
      else db.nextAfter(key); // the copy just made doubles as the key to skip: no second copy
    }
    return out;
  }

  /**
   * Bulk read into the caller's buffer: copies as many next entries as fit into `target[offset..)`, at most
   * `maxEntries` of them, each laid out as
   *
   *   keyLength u32 LE | valueLength u32 LE | key | value        (ENTRY_HEADER_SIZE + keyLength + valueLength bytes)
   *
   * (a length is 0 when the iterator was made with `keys: false` / `values: false`) and returns the offset just past
   * the last entry written. Returns `offset` itself at the end of the range (or limit). When not even the next entry
   * fits, returns `-n`, where `n` is the bytes that entry needs: nothing is consumed; call again with more room.
   * An entry that does not fit after others were written stays next, for the following call.
   *
   * Synchronous; allocates nothing per entry for keys and values up to 128 bytes (base/coding.ts COPY_LOOP_MAX), neither copies nor
   * views (a longer value is copied through one view, which is then cheaper than the byte loop): bytes go from the
   * table blocks and memtables straight into `target`, which the caller owns and may reuse as soon as the call
   * returns. Mixes freely with `next`/`nextv`/`seek`. Throws EngineError CLOSED after close, INVALID_ARGUMENT for a
   * bad target, offset or `maxEntries` (an integer >= 1, or Infinity, the default), CorruptionError.
   */
  nextvInto(target: Uint8Array, offset = 0, maxEntries = Number.POSITIVE_INFINITY): number {
    this.check();
    if (!(target instanceof Uint8Array)) throw invalidArgument('nextvInto takes a Uint8Array');
    if (!Number.isInteger(offset) || offset < 0 || offset > target.length) {
      throw invalidArgument(`offset ${offset} is outside the ${target.length}-byte target`);
    }
    if (!(maxEntries >= 1) || (maxEntries !== Number.POSITIVE_INFINITY && !Number.isInteger(maxEntries))) {
      throw invalidArgument(`maxEntries must be an integer >= 1 or Infinity, got ${String(maxEntries)}`);
    }
    const db = this.db;
    const keys = this.keys;
    const values = this.values;
    const reverse = this.reverse;
    const end = target.length;
    const stop = Math.min(this.limit, this.count + maxEntries);
    let at = offset;
    this.advance();
    // The cursor always rests on an entry not yet handed out (or past the end): the next call must not step off it.
    this.pending = true;
    while (db.valid() && this.count < stop && !this.beyond()) {
      const kl = keys ? db.keyLength() : 0;
      const vl = values ? db.valueLength() : 0;
      const need = ENTRY_HEADER_SIZE + kl + vl;
      if (need > end - at) return at === offset ? -need : at;
      writeU32LE(target, at, kl);
      writeU32LE(target, at + 4, vl);
      at += ENTRY_HEADER_SIZE;
      if (kl > 0) db.copyKeyInto(target, at);
      const keyAt = at;
      at += kl;
      if (vl > 0) db.copyValueInto(target, at, vl);
      at += vl;
      this.count++;
      if (reverse) db.prev();
      // The key just written doubles as the key to skip: no second copy.
      else if (keys) db.nextAfter(target, keyAt, kl);
      else db.next();
    }
    return at;
  }

  /** The next entry, or undefined at the end (abstract-level style). Rejects as `nextSync` throws. */
  next(): Promise<Entry | undefined> {
    try {
      return Promise.resolve(this.nextSync());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Up to `n` next entries in one array; an empty array at the end. Rejects as `nextSync` throws. */
  nextv(n: number): Promise<Entry[]> {
    try {
      return Promise.resolve(this.nextvSync(n));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Moves so that the next entry is the first at or after `key` (at or before, when reverse), within the bounds.
   * Throws EngineError CLOSED after close.
   */
  seek(key: Bytes): void {
    this.check();
    this.startAt(toBytes(key, 'key'));
    this.pending = true;
  }

  /** Releases what the iterator pins. Idempotent. */
  close(): Promise<void> {
    this.closeSync();
    return Promise.resolve();
  }

  /** @internal Synchronous close (the engine's close uses it). */
  closeSync(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    this.onClose(this);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Entry, void, undefined> {
    try {
      for (;;) {
        const batch = this.nextvSync(256);
        if (batch.length === 0) return;
        yield* batch;
      }
    } finally {
      this.closeSync();
    }
  }
}
