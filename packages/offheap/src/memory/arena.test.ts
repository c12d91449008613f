import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import {
  Arena,
  FLAGS_AT,
  LOC_TOMBSTONE,
  locationOf,
  locOffset,
  locSegment,
  MAX_RECORD_BYTES,
  MAX_SEGMENT_BYTES,
  MAX_SEGMENTS,
  NO_EXPIRY,
  RECORD_HEADER_BYTES,
  recordBytes,
  SIZE_CLASS_AT,
} from './arena.js';
import { sizeClassOf, sizeClassUnits } from './size-class.js';

/** Bytes of the block a record of `bytes` bytes gets. */
const blockOf = (bytes: number): number => sizeClassUnits(sizeClassOf((bytes + 7) >>> 3)) * 8;

describe('locations', () => {
  it('name a segment and an 8-byte-aligned offset, and round-trip', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_SEGMENTS - 1 }),
        fc.integer({ min: 0, max: MAX_SEGMENT_BYTES / 8 - 1 }),
        (seg, unit) => {
          const loc = locationOf(seg, unit * 8);
          expect(locSegment(loc)).toBe(seg);
          expect(locOffset(loc)).toBe(unit * 8);
        },
      ),
    );
    // The largest location is a u32: the index stores it in a Uint32Array slot.
    expect(locationOf(MAX_SEGMENTS - 1, MAX_SEGMENT_BYTES - 8) >>> 0).toBe(0xffffffff);
  });
});

describe('Arena', () => {
  it('never hands out locations 0 and 1 (the index: empty, deleted), and writes the class into the block', () => {
    const a = new Arena();
    const loc = a.alloc(recordBytes(1, 1));
    expect(loc).toBeGreaterThan(LOC_TOMBSTONE);
    expect(locOffset(loc)).toBe(16); // after the 16 reserved bytes of segment 0
    const seg = locSegment(loc);
    expect(a.sizeClass(seg, locOffset(loc))).toBe(sizeClassOf(3));
    expect(a.u8[seg]![locOffset(loc) + SIZE_CLASS_AT]).toBe(sizeClassOf(3));
    expect(a.u8[seg]![locOffset(loc) + FLAGS_AT]).toBe(0);
  });

  it('reads back a header it wrote, and a value length changed in place', () => {
    const a = new Arena();
    const loc = a.alloc(recordBytes(3, 20));
    const seg = locSegment(loc);
    const off = locOffset(loc);
    a.writeHeader(seg, off, 3, 20, 7, NO_EXPIRY);
    expect(a.version(seg, off)).toBe(7);
    expect(a.expiresAt(seg, off)).toBe(NO_EXPIRY);
    expect([a.keyLength(seg, off), a.valueLength(seg, off)]).toEqual([3, 20]);
    expect(a.u8[seg]![off + FLAGS_AT]).toBe(1);
    a.setValueLength(seg, off, 17);
    expect([a.keyLength(seg, off), a.valueLength(seg, off)]).toEqual([3, 17]);
    expect(a.blockBytes(loc)).toBe(blockOf(RECORD_HEADER_BYTES + 23));
  });

  it('reuses a freed block for the next record of its class, most recently freed first', () => {
    const a = new Arena();
    const x = a.alloc(40);
    const y = a.alloc(40);
    const other = a.alloc(200);
    a.free(x);
    a.free(y);
    expect(a.freeBytes).toBe(2 * blockOf(40));
    expect(a.alloc(200)).not.toBe(other); // another class: from the segment
    expect(a.alloc(40)).toBe(y);
    expect(a.alloc(40)).toBe(x);
    expect(a.freeBytes).toBe(0);
    expect(a.alloc(40)).toBeGreaterThan(other);
  });

  it('starts with a 256 KiB segment, doubles, and recycles the tail of a full segment as free blocks', () => {
    const a = new Arena();
    a.alloc(1000);
    expect(a.buffers.map((b) => b.byteLength)).toEqual([1 << 18]);
    const big = a.alloc(300_000); // does not fit in what is left of segment 0
    expect(locSegment(big)).toBe(1);
    expect(a.buffers.map((b) => b.byteLength)).toEqual([1 << 18, 1 << 19]);
    // The tail of segment 0 went to the free lists, not lost: every reserved byte is accounted for.
    expect(a.freeBytes).toBe((1 << 18) - 16 - blockOf(1000));
    expect(a.liveBytes + a.freeBytes + a.wasteBytes).toBe(a.usedBytes);
    expect(a.usedBytesOf(0)).toBe(1 << 18);
    expect(a.usedBytesOf(1)).toBe(blockOf(300_000));
  });

  it('holds the largest record in a segment of its own, and refuses a larger one', () => {
    const a = new Arena();
    const loc = a.alloc(MAX_RECORD_BYTES);
    expect(a.buffers[locSegment(loc)]!.byteLength).toBe(MAX_SEGMENT_BYTES);
    expect(locOffset(loc)).toBe(0);
    expect(() => a.alloc(MAX_RECORD_BYTES + 1)).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.VALUE_TOO_LARGE }),
    );
  });

  it('accounts every byte, under any sequence of allocations and frees (against a model)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: 9, max: 3000 }), fc.constant(-1)), { maxLength: 400 }), (ops) => {
        const a = new Arena();
        const held = new Map<number, number>(); // loc -> block bytes
        for (const op of ops) {
          if (op === -1) {
            const first = held.keys().next();
            if (first.done) continue;
            a.free(first.value);
            held.delete(first.value);
          } else {
            const loc = a.alloc(op);
            expect(held.has(loc)).toBe(false); // never a block that is in use
            held.set(loc, a.blockBytes(loc));
            expect(a.blockBytes(loc)).toBe(blockOf(op));
          }
        }
        expect(a.liveBytes).toBe([...held.values()].reduce((s, b) => s + b, 0));
        expect(a.liveBytes + a.freeBytes + a.wasteBytes).toBe(a.usedBytes);
        expect(a.reservedBytes).toBe(a.buffers.reduce((s, b) => s + b.byteLength, 0));
      }),
      { numRuns: 100 },
    );
  });

  it('restored from its state and segments, goes on allocating exactly where it stopped', () => {
    const a = new Arena();
    const locs = [40, 100, 40, 3000, 40].map((n) => a.alloc(n));
    a.free(locs[0]!);
    a.free(locs[3]!);
    // As an image gives them back: copies of the segments' bytes.
    const copies = a.buffers.map((sab) => {
      const c = new SharedArrayBuffer(sab.byteLength);
      new Uint8Array(c).set(new Uint8Array(sab));
      return c;
    });
    const b = new Arena();
    b.restore(copies, a.state());
    expect([b.liveBytes, b.freeBytes, b.wasteBytes, b.usedBytes]).toEqual([
      a.liveBytes,
      a.freeBytes,
      a.wasteBytes,
      a.usedBytes,
    ]);
    expect(b.dump()).toBe(a.dump());
    for (const n of [40, 3000, 40, 500]) expect(b.alloc(n)).toBe(a.alloc(n));
    expect(() => b.restore(copies, a.state())).toThrow('restore needs an empty arena');
  });

  it('dumps its segments and free lists', () => {
    const a = new Arena();
    a.free(a.alloc(16));
    expect(a.dump()).toBe(
      [
        'arena reserved=262144 live=0 free=16 waste=16',
        '  segment 0: 262144 bytes, used 32',
        '  free class 1 (16 B): 1',
      ].join('\n'),
    );
  });
});
