import { describe, expect, it } from 'vitest';
import { makeInternalKey, ValueKind } from '../base/internal-key.js';
import { resolveOptions } from '../base/options.js';
import { Version } from '../version/version.js';
import type { FileMetaData } from '../version/version-edit.js';
import { CompactionPicker } from './compaction-picker.js';

const enc = new TextEncoder();
let next = 1;
function f(from: string, to: string, size = 1000): FileMetaData {
  return {
    number: next++,
    size,
    entries: 1,
    smallest: makeInternalKey(enc.encode(from), 1, ValueKind.Value),
    largest: makeInternalKey(enc.encode(to), 1, ValueKind.Value),
  };
}
const version = (levels: FileMetaData[][]) =>
  new Version([...levels, ...Array.from({ length: 7 - levels.length }, () => [])]);
const options = resolveOptions({ level0CompactionTrigger: 4, maxBytesForLevelBase: 10_000, levelSizeMultiplier: 10 });

describe('compaction picker', () => {
  it('does nothing below the triggers', () => {
    const p = new CompactionPicker(options);
    expect(p.pick(version([[f('a', 'b'), f('c', 'd')], [f('a', 'z', 9000)]]))).toBeUndefined();
  });

  it('compacts every level-0 table with the level-1 tables they overlap once level 0 reaches its trigger', () => {
    const p = new CompactionPicker(options);
    const l1 = [f('a', 'c'), f('d', 'f'), f('x', 'z')];
    const c = p.pick(version([[f('b', 'd'), f('a', 'b'), f('e', 'e'), f('c', 'c')], l1]))!;
    expect(c.level).toBe(0);
    expect(c.inputs.length).toBe(4);
    expect(c.nextInputs.map((x) => x.number)).toEqual([l1[0]!.number, l1[1]!.number]);
    expect(c.trivialMove).toBe(false);
  });

  it('picks the level with the highest size score, round-robin over its tables, and moves a table down when nothing overlaps', () => {
    const p = new CompactionPicker(options);
    const l1 = [f('a', 'b', 6000), f('c', 'd', 6000)];
    const v = version([[], l1, [f('c', 'cz')]]);
    const first = p.pick(v)!;
    expect([first.level, first.inputs[0]!.number, first.trivialMove]).toEqual([1, l1[0]!.number, true]);
    const second = p.pick(v)!;
    expect([second.inputs[0]!.number, second.nextInputs.length, second.trivialMove]).toEqual([l1[1]!.number, 1, false]);
  });

  it('limits a manual compaction to the tables in range', () => {
    const p = new CompactionPicker(options);
    const mn = f('m', 'n');
    const v = version([
      [f('a', 'b'), mn],
      [f('a', 'c'), f('p', 'q')],
    ]);
    const c = p.pickRange(v, 0, enc.encode('l'), enc.encode('z'))!;
    expect(c.inputs.map((x) => x.number)).toEqual([mn.number]);
    expect(c.nextInputs.length).toBe(0);
    expect(p.pickRange(v, 1, enc.encode('d'), enc.encode('o'))).toBeUndefined();
  });
});
