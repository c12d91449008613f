/**
 * A cursor over one sorted, non-overlapping level (1 and below): the tables' cursors, concatenated. Opens one table
 * cursor at a time, on demand, through the engine's table source.
 */

import type { InternalIterator } from '../base/internal-iterator.js';
import { compareInternalKeys } from '../base/internal-key.js';
import type { TableSource } from '../version/version.js';
import type { FileMetaData } from '../version/version-edit.js';

export class LevelIterator implements InternalIterator {
  private index = -1;
  private iter: InternalIterator | undefined;

  constructor(
    private readonly files: readonly FileMetaData[],
    private readonly tables: TableSource,
    private readonly fillCache = true,
  ) {}

  private open(i: number): void {
    if (i === this.index && this.iter) return;
    this.iter?.close();
    this.iter = undefined;
    this.index = i;
    if (i >= 0 && i < this.files.length) this.iter = this.tables.iterator(this.files[i]!, this.fillCache);
  }

  private skipForward(): void {
    while (this.iter && !this.iter.valid()) {
      if (this.index + 1 >= this.files.length) {
        this.open(-1);
        return;
      }
      this.open(this.index + 1);
      this.iter?.seekToFirst();
    }
  }

  private skipBackward(): void {
    while (this.iter && !this.iter.valid()) {
      if (this.index <= 0) {
        this.open(-1);
        return;
      }
      this.open(this.index - 1);
      this.iter?.seekToLast();
    }
  }

  valid(): boolean {
    return this.iter?.valid() === true;
  }

  seekToFirst(): void {
    this.open(0);
    this.iter?.seekToFirst();
    this.skipForward();
  }

  seekToLast(): void {
    this.open(this.files.length - 1);
    this.iter?.seekToLast();
    this.skipBackward();
  }

  seek(target: Uint8Array): void {
    let lo = 0;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareInternalKeys(this.files[mid]!.largest, target) < 0) lo = mid + 1;
      else hi = mid;
    }
    this.open(lo);
    this.iter?.seek(target);
    this.skipForward();
  }

  next(): void {
    this.iter!.next();
    this.skipForward();
  }

  prev(): void {
    this.iter!.prev();
    this.skipBackward();
  }

  key(): Uint8Array {
    return this.iter!.key();
  }

  value(): Uint8Array {
    return this.iter!.value();
  }

  valueLength(): number {
    return this.iter!.valueLength();
  }

  valueBuffer(): Uint8Array {
    return this.iter!.valueBuffer();
  }

  valueOffset(): number {
    return this.iter!.valueOffset();
  }

  close(): void {
    this.open(-1);
  }
}
