import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InternalIterator } from '../base/internal-iterator.js';
import { compareInternalKeys, makeInternalKey, ValueKind } from '../base/internal-key.js';
import { Block } from '../table/block.js';
import { BlockBuilder } from '../table/block-builder.js';
import { BlockIterator } from '../table/block-iterator.js';
import { MergingIterator } from './merging-iterator.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** A child over a sorted array, counting closes. */
class ArrayIterator implements InternalIterator {
  private pos = -1;
  closes = 0;
  constructor(private readonly keys: Uint8Array[]) {}
  valid() {
    return this.pos >= 0 && this.pos < this.keys.length;
  }
  seekToFirst() {
    this.pos = 0;
  }
  seekToLast() {
    this.pos = this.keys.length - 1;
  }
  seek(t: Uint8Array) {
    this.pos = this.keys.findIndex((k) => compareInternalKeys(k, t) >= 0);
    if (this.pos < 0) this.pos = this.keys.length;
  }
  next() {
    this.pos++;
  }
  prev() {
    this.pos--;
  }
  key() {
    return this.keys[this.pos]!;
  }
  value() {
    return this.keys[this.pos]!.subarray(0, 1);
  }
  valueLength() {
    return 1;
  }
  valueBuffer() {
    return this.keys[this.pos]!;
  }
  valueOffset() {
    return 0;
  }
  close() {
    this.closes++;
  }
}

/** Half the children are arrays, half are real blocks (whose key() views are reused buffers). */
function child(keys: Uint8Array[], i: number): InternalIterator {
  if (i % 2 === 0) return new ArrayIterator(keys);
  const b = new BlockBuilder(3);
  for (const k of keys) b.add(k, k.subarray(0, 1));
  return new BlockIterator(new Block(b.finish().slice(), 'm.sst', 0));
}

const keyArb = fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 3 }), fc.integer({ min: 0, max: 20 }));

describe('merging iterator', () => {
  it('matches a sorted array model under seeks, steps and direction changes', () => {
    fc.assert(
      fc.property(
        // Unique (user key, seq) across all children: the engine never has one internal key in two sources.
        fc.uniqueArray(keyArb, { maxLength: 60, selector: ([k, s]) => `${hex(k)}/${s}` }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(
          fc.tuple(
            fc.oneof(fc.constant('first'), fc.constant('last'), keyArb),
            fc.array(fc.boolean(), { maxLength: 12 }),
          ),
          {
            maxLength: 8,
          },
        ),
        (raw, k, ops) => {
          const all = raw.map(([u, s]) => makeInternalKey(u, s, ValueKind.Value)).sort(compareInternalKeys);
          const parts: Uint8Array[][] = Array.from({ length: k }, () => []);
          all.forEach((key, i) => {
            parts[(i * 7 + key[0]!) % k]!.push(key);
          });
          const m = new MergingIterator(parts.map(child));
          for (const [start, moves] of ops) {
            let pos: number;
            if (start === 'first') {
              m.seekToFirst();
              pos = 0;
            } else if (start === 'last') {
              m.seekToLast();
              pos = all.length - 1;
            } else {
              const t = makeInternalKey(start[0], start[1], ValueKind.Value);
              m.seek(t);
              pos = all.findIndex((x) => compareInternalKeys(x, t) >= 0);
              if (pos < 0) pos = all.length;
            }
            for (const fwd of moves) {
              expect(m.valid()).toBe(pos >= 0 && pos < all.length);
              if (!m.valid()) break;
              expect(hex(m.key())).toBe(hex(all[pos]!));
              expect(m.value()[0]).toBe(all[pos]![0]);
              if (fwd) {
                m.next();
                pos++;
              } else {
                m.prev();
                pos--;
              }
            }
            expect(m.valid()).toBe(pos >= 0 && pos < all.length);
          }
          m.close();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('walks a full merge both ways', () => {
    const keys: Uint8Array[] = [];
    for (let i = 0; i < 300; i++)
      keys.push(makeInternalKey(new Uint8Array([i >> 4, i & 15]), 1000 - i, ValueKind.Value));
    // Uneven children: child 3 takes two residues, and runs of neighbours land in the same child.
    const parts = [0, 1, 2, 3].map((c) => keys.filter((_, i) => Math.min(3, (i >> 2) % 5) === c));
    const m = new MergingIterator(parts.map(child));
    const fwd: string[] = [];
    for (m.seekToFirst(); m.valid(); m.next()) fwd.push(hex(m.key()));
    expect(fwd).toEqual(keys.map(hex));
    const back: string[] = [];
    for (m.seekToLast(); m.valid(); m.prev()) back.push(hex(m.key()));
    expect(back).toEqual(keys.map(hex).reverse());
    m.close();
  });

  it('handles no children and empty children', () => {
    const none = new MergingIterator([]);
    none.seekToFirst();
    expect(none.valid()).toBe(false);
    const empty = new MergingIterator([new ArrayIterator([]), new ArrayIterator([])]);
    empty.seekToLast();
    expect(empty.valid()).toBe(false);
    empty.seek(makeInternalKey(new Uint8Array([1]), 1, ValueKind.Value));
    expect(empty.valid()).toBe(false);
  });

  it('closes every child once', () => {
    const a = new ArrayIterator([]);
    const b = new ArrayIterator([]);
    const m = new MergingIterator([a, b]);
    m.close();
    m.close();
    expect([a.closes, b.closes]).toEqual([1, 1]);
  });
});
