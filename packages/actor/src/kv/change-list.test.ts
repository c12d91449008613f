import fc from 'fast-check';
import { Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { ChangeList, type DecodedChange, readChange } from './change-list.js';

const unpackr = new Unpackr({ mapsAsObjects: false, useRecords: false });
const decodeAll = (l: ChangeList) =>
  l.length === 0 ? [] : (unpackr.unpackMultiple(l.bytes.subarray(0, l.length)) as unknown[]);
const norm = (v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v);

/** Sequence, key length and value length (null: a delete) at each header size's boundary. */
const cases: [number, number, number | null][] = [
  [0, 0, 0],
  [1, 31, 255],
  [2, 32, 256],
  [0xffff_ffff, 255, 65_535],
  [0x1_0000_0000, 256, 65_536],
  [2 ** 53 - 1, 65_536, null],
];

function appendBoundaries(l: ChangeList): void {
  for (const [seq, keyLen, valueLen] of cases) {
    l.append(seq, Buffer.alloc(keyLen, 'k'), valueLen === null ? undefined : Buffer.alloc(valueLen, 7));
  }
}

describe('ChangeList', () => {
  it('writes msgpack any reader decodes, at every header size boundary', () => {
    const l = new ChangeList();
    appendBoundaries(l);
    expect(decodeAll(l).map((c) => (c as unknown[]).map(norm))).toEqual(
      cases.map(([seq, keyLen, valueLen]) => [
        seq,
        'k'.repeat(keyLen),
        valueLen === null ? null : Buffer.alloc(valueLen, 7).toString('hex'),
      ]),
    );
    for (let i = 0; i < cases.length; i++) {
      expect(l.sequences[i]).toBe(cases[i]![0]);
      expect(l.keyLength[i]).toBe(cases[i]![1]);
    }
  });

  it('keeps spans, prefixes and sequences right through appendFrom, dropFirst and growth', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ maxLength: 40 }), fc.option(fc.uint8Array({ maxLength: 300 }))), {
          maxLength: 3000,
        }),
        fc.nat(),
        (changes, cutSeed) => {
          const a = new ChangeList();
          for (const [i, [k, v]] of changes.entries()) a.append(i * 3, Buffer.from(k), v ?? undefined);
          const cut = changes.length === 0 ? 0 : cutSeed % (changes.length + 1);
          const b = new ChangeList();
          b.appendFrom(a, 0, a.count);
          b.dropFirst(cut);
          const want = changes.slice(cut).map(([k, v], i) => [(i + cut) * 3, k, v === null ? null : norm(v)]);
          expect(decodeAll(b).map((c) => (c as unknown[]).map(norm))).toEqual(want);
          for (let i = 0; i < b.count; i++) {
            const key = Buffer.from(changes[i + cut]![0]);
            expect(b.keyStartsWith(i, key)).toBe(true);
            expect(b.keyStartsWith(i, Buffer.concat([key, Buffer.from('~')]))).toBe(false);
            expect(Buffer.from(b.bytes.subarray(b.startOf(i), b.ends[i])).length).toBeGreaterThan(key.length);
          }
          if (b.count > 0) expect(b.firstAfter(b.sequences[0]!, 0, b.count)).toBe(Math.min(1, b.count));
          expect(b.firstAfter(-1, 0, b.count)).toBe(0);
          expect(b.firstAfter(Number.MAX_SAFE_INTEGER, 0, b.count)).toBe(b.count);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('reads back every change as it was appended, at every header size, and refuses bytes that are not one', () => {
    const l = new ChangeList();
    appendBoundaries(l);
    const c: DecodedChange = { sequence: -1, key: new Uint8Array(0), value: null, end: 0 };
    let at = 0;
    for (const [i, [seq, keyLen, valueLen]] of cases.entries()) {
      readChange(l.bytes.subarray(0, l.length), at, c);
      expect([c.sequence, c.key.length, c.value === null ? null : c.value.length]).toEqual([seq, keyLen, valueLen]);
      expect(c.end).toBe(l.ends[i]);
      at = c.end;
    }
    const one = l.bytes.subarray(0, l.ends[1]);
    expect(() => readChange(Buffer.from([0x92]), 0, c)).toThrow(RangeError);
    expect(() => readChange(Buffer.from([0x93, 0x01]), 0, c)).toThrow(RangeError);
    expect(() => readChange(Buffer.from([0x93, 0xce, 0, 0, 0, 1, 0xc4]), 0, c)).toThrow(RangeError);
    expect(() => readChange(one.subarray(0, one.length - 1), l.ends[0]!, c)).toThrow(RangeError);
  });
});
