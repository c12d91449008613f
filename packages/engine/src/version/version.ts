/**
 * A version: the set of live tables, per level, at one moment. Versions are immutable; a flush or compaction makes a
 * new one (version-set.ts). Readers (iterators) hold a reference so that the tables they read are not deleted while
 * they read them: a table file is deleted only when no live version lists it.
 *
 * Level 0 is ordered newest first (by file number, which grows with time) and its tables may overlap; every deeper
 * level is ordered by smallest key and its tables do not overlap.
 */

import type { InternalIterator } from '../base/internal-iterator.js';
import { compareBytes, compareInternalKeys, TRAILER_SIZE } from '../base/internal-key.js';
import { bloomHash } from '../table/bloom.js';
import type { GetResult } from '../table/table-reader.js';
import type { FileMetaData } from './version-edit.js';

/** Access to tables by metadata (the engine's table cache). */
export interface TableSource {
  /**
   * The newest entry of `userKey` with sequence <= `seq` in the table, a value being a copy the caller owns; `hash`
   * is its bloomHash (computed once per lookup for every table tried). Throws CorruptionError.
   */
  get(file: FileMetaData, userKey: Uint8Array, seq: number, hash: number): GetResult;
  /** A cursor over the whole table; the caller closes it. `fillCache` as TableIteratorOptions (default true). */
  iterator(file: FileMetaData, fillCache?: boolean): InternalIterator;
}

/** Compares the user-key part of an internal key with a user key (bytewise), allocating nothing. */
export function compareUserKeyOf(ikey: Uint8Array, userKey: Uint8Array): number {
  // Its own loop, not compareBytesAt's: this is on every lookup's path, and a loop only it runs stays monomorphic.
  const al = ikey.length - TRAILER_SIZE;
  const bl = userKey.length;
  const n = Math.min(al, bl);
  for (let i = 0; i < n; i++) {
    const d = ikey[i]! - userKey[i]!;
    if (d !== 0) return d;
  }
  return al - bl;
}

export class Version {
  /** Tables per level (see the ordering above). Never mutated after construction. */
  readonly files: readonly (readonly FileMetaData[])[];
  private refs = 0;

  constructor(files: FileMetaData[][]) {
    files[0]!.sort((a, b) => b.number - a.number);
    for (let l = 1; l < files.length; l++) files[l]!.sort((a, b) => compareInternalKeys(a.smallest, b.smallest));
    this.files = files;
  }

  ref(): void {
    this.refs++;
  }

  /**
   * Drops a reference. Once the last one is gone, the tables only this version listed may be deleted: the owner of
   * the reference that was dropped then deletes obsolete files.
   */
  unref(): void {
    this.refs--;
  }

  get referenced(): boolean {
    return this.refs > 0;
  }

  levelBytes(level: number): number {
    let n = 0;
    for (const f of this.files[level]!) n += f.size;
    return n;
  }

  /**
   * Looks `userKey` up as of `seq`: level 0 newest first, then one table per deeper level found by binary search.
   * `hash`: the key's bloomHash, if the caller already has it.
   * Returns the value, DELETED, or undefined. Throws CorruptionError from the table layer.
   */
  get(userKey: Uint8Array, seq: number, tables: TableSource, hash = bloomHash(userKey, 0, userKey.length)): GetResult {
    const l0 = this.files[0]!;
    for (let i = 0; i < l0.length; i++) {
      const f = l0[i]!;
      if (compareUserKeyOf(f.smallest, userKey) > 0 || compareUserKeyOf(f.largest, userKey) < 0) continue;
      const r = tables.get(f, userKey, seq, hash);
      if (r !== undefined) return r;
    }
    for (let level = 1; level < this.files.length; level++) {
      const files = this.files[level]!;
      if (files.length === 0) continue;
      const i = findFile(files, userKey);
      if (i >= files.length) continue;
      const f = files[i]!;
      if (compareUserKeyOf(f.smallest, userKey) > 0) continue;
      const r = tables.get(f, userKey, seq, hash);
      if (r !== undefined) return r;
    }
    return undefined;
  }

  /**
   * Tables of `level` whose user-key range meets [begin, end] (undefined = unbounded). At level 0, a table that
   * meets the range widens it and the search restarts, so that the result holds every version of the keys it covers.
   */
  overlapping(level: number, begin: Uint8Array | undefined, end: Uint8Array | undefined): FileMetaData[] {
    const out: FileMetaData[] = [];
    const files = this.files[level]!;
    for (let i = 0; i < files.length; ) {
      const f = files[i++]!;
      const fs = f.smallest.subarray(0, f.smallest.length - TRAILER_SIZE);
      const fl = f.largest.subarray(0, f.largest.length - TRAILER_SIZE);
      if ((begin && compareBytes(fl, begin) < 0) || (end && compareBytes(fs, end) > 0)) continue;
      out.push(f);
      if (level === 0) {
        if (begin && compareBytes(fs, begin) < 0) {
          begin = fs;
          out.length = 0;
          i = 0;
        } else if (end && compareBytes(fl, end) > 0) {
          end = fl;
          out.length = 0;
          i = 0;
        }
      }
    }
    return out;
  }

  /** True if some table below `level` may hold `userKey` (so a tombstone at `level` must be kept). */
  keyMayExistBelow(level: number, userKey: Uint8Array): boolean {
    for (let l = level + 1; l < this.files.length; l++) {
      const files = this.files[l]!;
      const i = findFile(files, userKey);
      if (i < files.length && compareUserKeyOf(files[i]!.smallest, userKey) <= 0) return true;
    }
    return false;
  }

  /** A debug dump for tests: one line per non-empty level, `L<n>: number[smallest..largest] ...`. */
  dump(): string[] {
    const out: string[] = [];
    this.files.forEach((files, level) => {
      if (files.length === 0) return;
      const show = (k: Uint8Array) => Buffer.from(k.subarray(0, k.length - TRAILER_SIZE)).toString('latin1');
      out.push(`L${level}: ${files.map((f) => `${f.number}[${show(f.smallest)}..${show(f.largest)}]`).join(' ')}`);
    });
    return out;
  }
}

/** Index of the first table in a sorted level whose largest user key is >= `userKey` (files.length if none). */
export function findFile(files: readonly FileMetaData[], userKey: Uint8Array): number {
  let lo = 0;
  let hi = files.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareUserKeyOf(files[mid]!.largest, userKey) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
