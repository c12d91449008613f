/**
 * Choosing what to compact (LevelDB's leveled scheme, see version_set.cc's scoring):
 *
 * - level 0 scores its table count over `level0CompactionTrigger` (its tables overlap, so each one costs a read);
 * - level n >= 1 scores its bytes over `maxBytesForLevelBase * levelSizeMultiplier^(n-1)`;
 * - the highest score >= 1 is compacted: at level 0 every table (they overlap one another), at level n one table,
 *   chosen round-robin after the last key compacted there; plus the tables of the next level it overlaps.
 *
 * A single input with nothing below it overlapping is moved down by a manifest edit alone (a trivial move).
 */
import { compareInternalKeys, TRAILER_SIZE } from '../base/internal-key.js';
import type { ResolvedOptions } from '../base/options.js';
import type { Version } from '../version/version.js';
import type { FileMetaData } from '../version/version-edit.js';

export interface Compaction {
  /** The input level; outputs go to `level + 1`. */
  level: number;
  inputs: FileMetaData[];
  /** The tables of `level + 1` the inputs overlap. */
  nextInputs: FileMetaData[];
  /** Move the single input down without rewriting it. */
  trivialMove: boolean;
}

function userKey(ikey: Uint8Array): Uint8Array {
  return ikey.subarray(0, ikey.length - TRAILER_SIZE);
}

/** Smallest and largest user keys over some tables. */
export function keyRange(files: readonly FileMetaData[]): [Uint8Array, Uint8Array] {
  let lo = files[0]!.smallest;
  let hi = files[0]!.largest;
  for (const f of files) {
    if (compareInternalKeys(f.smallest, lo) < 0) lo = f.smallest;
    if (compareInternalKeys(f.largest, hi) > 0) hi = f.largest;
  }
  return [userKey(lo), userKey(hi)];
}

export class CompactionPicker {
  private readonly options: ResolvedOptions;
  /** Per level: the largest internal key of the last compaction there (round-robin; not persisted). */
  private readonly pointers: (Uint8Array | undefined)[];

  constructor(options: ResolvedOptions) {
    this.options = options;
    this.pointers = new Array(options.numLevels).fill(undefined);
  }

  maxBytesForLevel(level: number): number {
    return this.options.maxBytesForLevelBase * this.options.levelSizeMultiplier ** Math.max(0, level - 1);
  }

  /** The level most in need of compaction and its score (>= 1 means compact). */
  bestScore(v: Version): { level: number; score: number } {
    let best = { level: 0, score: v.files[0]!.length / this.options.level0CompactionTrigger };
    for (let level = 1; level < this.options.numLevels - 1; level++) {
      const score = v.levelBytes(level) / this.maxBytesForLevel(level);
      if (score > best.score) best = { level, score };
    }
    return best;
  }

  /** What to compact in `v` now, or undefined if nothing needs it. */
  pick(v: Version): Compaction | undefined {
    const { level, score } = this.bestScore(v);
    if (score < 1) return undefined;
    let inputs: FileMetaData[];
    if (level === 0) {
      inputs = [...v.files[0]!];
    } else {
      const files = v.files[level]!;
      const after = this.pointers[level];
      const f = (after && files.find((x) => compareInternalKeys(x.largest, after) > 0)) || files[0]!;
      inputs = [f];
    }
    return this.make(v, level, inputs);
  }

  /**
   * What a manual compaction of [begin, end] (user keys; undefined = unbounded) must do at `level`, or undefined if
   * the level holds nothing in that range.
   */
  pickRange(
    v: Version,
    level: number,
    begin: Uint8Array | undefined,
    end: Uint8Array | undefined,
  ): Compaction | undefined {
    const inputs = v.overlapping(level, begin, end);
    if (inputs.length === 0) return undefined;
    return this.make(v, level, inputs);
  }

  private make(v: Version, level: number, inputs: FileMetaData[]): Compaction {
    const [lo, hi] = keyRange(inputs);
    const nextInputs = v.overlapping(level + 1, lo, hi);
    this.pointers[level] = inputs.reduce(
      (m, f) => (compareInternalKeys(f.largest, m) > 0 ? f.largest : m),
      inputs[0]!.largest,
    );
    return { level, inputs, nextInputs, trivialMove: inputs.length === 1 && nextInputs.length === 0 };
  }
}
