// The READERS protocol between a writer and readers (reader-pins.ts), with descriptors of one process: Linux's
// open-file-description locks conflict between descriptors, whatever process holds them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReaderPins, ReaderRegistry } from './reader-pins.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-pins-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe.runIf(process.platform === 'linux')('reader pins', () => {
  it('hold back deletions dropped after the pinned generation, not those dropped before it', () => {
    expect(ReaderPins.open(dir)).toBeUndefined(); // no writer of this version made READERS: hold descriptors
    const writer = ReaderRegistry.open(dir);
    const reader = ReaderPins.open(dir)!;
    const other = ReaderPins.open(dir)!;
    expect(writer.mayDeleteTables(100)).toBe(true);
    reader.pin(40);
    expect(writer.mayDeleteTables(40)).toBe(true); // dropped by the edit of generation 40: the view at 40 lacks it
    expect(writer.mayDeleteTables(41)).toBe(false); // the view at 40 may list it
    other.pin(0); // an opening reader: nothing at all goes
    expect(writer.mayDeleteTables(1)).toBe(false);
    other.unpin(0);
    // A follower moving on: the new byte first, then the old one.
    reader.pin(60);
    reader.pin(60);
    reader.unpin(40);
    expect(reader.generations).toEqual([60]);
    expect(writer.mayDeleteTables(60)).toBe(true);
    expect(writer.mayDeleteTables(61)).toBe(false);
    reader.unpin(60);
    expect(writer.mayDeleteTables(61)).toBe(false); // still held once
    reader.unpin(60);
    expect(writer.mayDeleteTables(1000)).toBe(true);
    reader.pin(5);
    reader.close(); // the kernel drops the locks with the descriptor (as when the process dies)
    expect(writer.mayDeleteTables(1000)).toBe(true);
    other.close();
    writer.close();
  });
});
