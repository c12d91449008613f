import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../base/errors.js';
import { tableFileName } from '../base/filenames.js';
import { makeInternalKey, ValueKind } from '../base/internal-key.js';
import { BlockCache } from './block-cache.js';
import { TableBuilder } from './table-builder.js';
import { TableCache } from './table-cache.js';

const dir = mkdtempSync(join(tmpdir(), 'heapless-tcache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const enc = new TextEncoder();
const dec = new TextDecoder();

for (let f = 1; f <= 12; f++) {
  const b = new TableBuilder(tableFileName(dir, f));
  for (let i = 0; i < 50; i++)
    b.add(makeInternalKey(enc.encode(`k${String(i).padStart(3, '0')}`), f, ValueKind.Value), enc.encode(`f${f}:${i}`));
  b.finish();
}

/** Descriptors this process has open on files of `dir`. */
function openTables(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) n++;
    } catch {
      // The descriptor closed while we listed.
    }
  }
  return n;
}

describe('table cache', () => {
  it('opens tables by number and keeps at most maxOpenFiles descriptors', () => {
    const tc = new TableCache(dir, { maxOpenFiles: 4 });
    for (let round = 0; round < 3; round++) {
      for (let f = 1; f <= 12; f++) {
        expect(dec.decode(tc.get(f).get(enc.encode('k007'), 100) as Uint8Array)).toBe(`f${f}:7`);
        expect(tc.openCount).toBeLessThanOrEqual(4);
        expect(openTables()).toBeLessThanOrEqual(4);
      }
    }
    tc.close();
    expect(openTables()).toBe(0);
    expect(() => tc.get(1)).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
  });

  it('returns the same reader while it stays open, least recently used goes first', () => {
    const tc = new TableCache(dir, { maxOpenFiles: 2 });
    const r1 = tc.get(1);
    const r2 = tc.get(2);
    expect(tc.get(1)).toBe(r1); // 2 is now the least recently used
    tc.get(3);
    expect(r2.closed).toBe(true);
    expect(r1.closed).toBe(false);
    expect(tc.get(1)).toBe(r1);
    tc.close();
  });

  it('keeps a pinned reader open until its iterator closes', () => {
    const tc = new TableCache(dir, { maxOpenFiles: 1 });
    const it = tc.get(1).iterator();
    tc.get(2); // evicts 1, which stays open for the iterator
    expect(openTables()).toBe(2);
    let n = 0;
    for (it.seekToFirst(); it.valid(); it.next()) n++;
    expect(n).toBe(50);
    it.close();
    expect(openTables()).toBe(1);
    tc.close();
    expect(openTables()).toBe(0);
  });

  it('evict() closes the reader and drops its blocks', () => {
    const blockCache = new BlockCache();
    const tc = new TableCache(dir, { blockCache });
    tc.get(5).get(enc.encode('k001'), 100);
    tc.get(6).get(enc.encode('k001'), 100);
    expect(blockCache.size).toBe(2);
    const r5 = tc.get(5);
    tc.evict(5);
    expect(r5.closed).toBe(true);
    expect(blockCache.size).toBe(1);
    expect(tc.openCount).toBe(1);
    tc.close();
  });

  it('reports a missing table as CorruptionError', () => {
    const tc = new TableCache(dir);
    expect(() => tc.get(999)).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPTION }));
    tc.close();
  });
});
