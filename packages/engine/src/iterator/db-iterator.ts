/**
 * Turns a merged cursor over internal keys (every version of every key, newest first per key) into a cursor over
 * the user's view as of one sequence number: the newest version at or below it of each key, deletions hidden.
 *
 * Forward: the cursor sits on the entry to return. Reverse (as in LevelDB's DBIter): the cursor sits before every
 * entry of the key to return, whose key is kept in an instance-owned buffer and whose value's place is kept.
 * A DbIterator moves in the direction it was positioned in (seekToFirst/seek forward, seekToLast/seekForPrev reverse).
 */

import { copyBytes } from '../base/coding.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import { compareBytesAt, TRAILER_SIZE, ValueKind, writeTrailer } from '../base/internal-key.js';

function seqOf(ikey: Uint8Array): number {
  const at = ikey.length - TRAILER_SIZE;
  const hi = ((ikey[at]! << 24) | (ikey[at + 1]! << 16) | (ikey[at + 2]! << 8) | ikey[at + 3]!) >>> 0;
  const lo = ((ikey[at + 4]! << 16) | (ikey[at + 5]! << 8) | ikey[at + 6]!) >>> 0;
  return hi * 0x100_0000 + lo;
}

const EMPTY = new Uint8Array(0);

export class DbIterator {
  private readonly iter: InternalIterator;
  private readonly sequence: number;
  private reverse = false;
  private isValid = false;
  /** Forward: the key being skipped. Reverse: the current key. */
  private saved = new Uint8Array(64);
  private savedLength = 0;
  /** Forward: the key whose older versions are being skipped (`saved`, or a caller's copy; see `nextAfter`). */
  private skip: Uint8Array = this.saved;
  private skipOffset = 0;
  private skipLength = 0;
  /** Reverse: where the current value lies, `savedValue[savedValueOffset..+savedValueLength)` (a source's bytes). */
  private savedValue: Uint8Array = EMPTY;
  private savedValueOffset = 0;
  private savedValueLength = 0;
  private seekKey = new Uint8Array(64);

  /** Takes ownership of `iter` (closed by `close()`). */
  constructor(iter: InternalIterator, sequence: number) {
    this.iter = iter;
    this.sequence = sequence;
  }

  valid(): boolean {
    return this.isValid;
  }

  /** The current user key: a view valid until the cursor moves. */
  key(): Uint8Array {
    if (this.reverse) return this.saved.subarray(0, this.savedLength);
    const k = this.iter.key();
    return k.subarray(0, k.length - TRAILER_SIZE);
  }

  /** A copy of the current user key, the caller's to keep. */
  keyCopy(): Uint8Array {
    if (this.reverse) return this.saved.slice(0, this.savedLength);
    const k = this.iter.key();
    return k.slice(0, k.length - TRAILER_SIZE);
  }

  /** Length of the current user key. */
  keyLength(): number {
    return this.reverse ? this.savedLength : this.iter.key().length - TRAILER_SIZE;
  }

  /** Copies the current user key into `target` at `at` (the caller checked the room). No allocation. */
  copyKeyInto(target: Uint8Array, at: number): void {
    const k = this.reverse ? this.saved : this.iter.key();
    copyBytes(k, 0, this.reverse ? this.savedLength : k.length - TRAILER_SIZE, target, at);
  }

  /** Compares the current user key with `other` bytewise, in place. */
  compareKey(other: Uint8Array): number {
    if (this.reverse) return compareBytesAt(this.saved, 0, this.savedLength, other, 0, other.length);
    const k = this.iter.key();
    return compareBytesAt(k, 0, k.length - TRAILER_SIZE, other, 0, other.length);
  }

  /** Length of the current value. */
  valueLength(): number {
    return this.reverse ? this.savedValueLength : this.iter.valueLength();
  }

  /**
   * Copies the current value, `length` (= `valueLength()`) bytes, into `target` at `at` (the caller checked the
   * room). No allocation.
   */
  copyValueInto(target: Uint8Array, at: number, length: number): void {
    if (this.reverse) copyBytes(this.savedValue, this.savedValueOffset, length, target, at);
    else copyBytes(this.iter.valueBuffer(), this.iter.valueOffset(), length, target, at);
  }

  /** The current value: a view valid until the cursor moves. */
  value(): Uint8Array {
    if (!this.reverse) return this.iter.value();
    return this.savedValue.subarray(this.savedValueOffset, this.savedValueOffset + this.savedValueLength);
  }

  seekToFirst(): void {
    this.reverse = false;
    this.iter.seekToFirst();
    this.findNextUserEntry(false);
  }

  /** Positions on the first key >= `userKey`. */
  seek(userKey: Uint8Array): void {
    this.reverse = false;
    this.iter.seek(this.makeSeekKey(userKey, this.sequence, ValueKind.Value));
    this.findNextUserEntry(false);
  }

  next(): void {
    // Skip every remaining version of the current key.
    const k = this.iter.key();
    this.save(k, k.length - TRAILER_SIZE);
    this.iter.next();
    this.findNextUserEntry(true);
  }

  /**
   * `next()` for a caller that already holds a copy of the current key, at `copy[offset..offset+length)` (from
   * `keyCopy()` or `copyKeyInto`): it is used as the key to skip instead of copying the key again. The copy is only
   * read, and only during this call.
   */
  nextAfter(copy: Uint8Array, offset = 0, length = copy.length): void {
    this.skip = copy;
    this.skipOffset = offset;
    this.skipLength = length;
    this.iter.next();
    this.findNextUserEntry(true);
  }

  seekToLast(): void {
    this.reverse = true;
    this.iter.seekToLast();
    this.findPrevUserEntry();
  }

  /** Positions on the last key <= `userKey`. */
  seekForPrev(userKey: Uint8Array): void {
    this.reverse = true;
    // (userKey, 0, Deletion) sorts after every real version of userKey (sequences start at 1).
    this.iter.seek(this.makeSeekKey(userKey, 0, ValueKind.Deletion));
    if (this.iter.valid()) this.iter.prev();
    else this.iter.seekToLast();
    this.findPrevUserEntry();
  }

  prev(): void {
    this.findPrevUserEntry();
  }

  private makeSeekKey(userKey: Uint8Array, seq: number, kind: ValueKind): Uint8Array {
    const n = userKey.length + TRAILER_SIZE;
    if (this.seekKey.length < n) this.seekKey = new Uint8Array(n * 2);
    copyBytes(userKey, 0, userKey.length, this.seekKey, 0);
    writeTrailer(this.seekKey, userKey.length, seq, kind);
    return this.seekKey.subarray(0, n);
  }

  private save(ikey: Uint8Array, length: number): void {
    if (this.saved.length < length) this.saved = new Uint8Array(length * 2);
    copyBytes(ikey, 0, length, this.saved, 0);
    this.savedLength = length;
    this.skip = this.saved;
    this.skipOffset = 0;
    this.skipLength = length;
  }

  private findNextUserEntry(skipping: boolean): void {
    const iter = this.iter;
    const seq = this.sequence;
    while (iter.valid()) {
      const k = iter.key();
      if (seqOf(k) <= seq) {
        const kind = k[k.length - 1]!;
        if (kind === ValueKind.Deletion) {
          // Hide every older version of this key.
          this.save(k, k.length - TRAILER_SIZE);
          skipping = true;
        } else if (
          !(skipping && compareBytesAt(k, 0, k.length - TRAILER_SIZE, this.skip, this.skipOffset, this.skipLength) <= 0)
        ) {
          this.isValid = true;
          return;
        }
      }
      iter.next();
    }
    this.isValid = false;
  }

  private findPrevUserEntry(): void {
    const iter = this.iter;
    const seq = this.sequence;
    let kind: number = ValueKind.Deletion;
    while (iter.valid()) {
      const k = iter.key();
      if (seqOf(k) <= seq) {
        if (
          kind !== ValueKind.Deletion &&
          compareBytesAt(k, 0, k.length - TRAILER_SIZE, this.saved, 0, this.savedLength) < 0
        )
          break;
        kind = k[k.length - 1]!;
        if (kind === ValueKind.Deletion) {
          this.savedLength = 0;
          this.savedValueLength = 0;
        } else {
          this.save(k, k.length - TRAILER_SIZE);
          // Where the value lies, not a copy: its bytes stay put after the cursor moves on (see InternalIterator).
          this.savedValue = iter.valueBuffer();
          this.savedValueOffset = iter.valueOffset();
          this.savedValueLength = iter.valueLength();
        }
      }
      iter.prev();
    }
    this.isValid = kind !== ValueKind.Deletion;
  }

  close(): void {
    this.isValid = false;
    this.iter.close();
  }
}
