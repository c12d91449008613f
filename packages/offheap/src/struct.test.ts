import { StructViewCore } from '@heapless/struct';
import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from './errors.js';
import { OffHeapMap } from './map/offheap-map.js';
import { OffHeapMapReader } from './shared/offheap-reader.js';
import { array, struct, utf8 } from './struct.js';
import { StructViewBase } from './struct-view.js';

const All = struct({
  u8: 'u8',
  i8: 'i8',
  u16: 'u16',
  i16: 'i16',
  u32: 'u32',
  i32: 'i32',
  f32: 'f32',
  f64: 'f64',
  flag: 'bool',
  i64: 'i64',
  u64: 'u64',
  short: utf8(5),
  long: utf8(300),
  ids: array('u32', 3),
  bits: array('bool', 2),
  bigs: array('i64', 2),
});
type AllValue = ReturnType<typeof All.decode>;

const low: AllValue = {
  u8: 0,
  i8: -128,
  u16: 0,
  i16: -32768,
  u32: 0,
  i32: -2147483648,
  f32: -3.4028234663852886e38,
  f64: -Number.MAX_VALUE,
  flag: false,
  i64: -(2n ** 63n),
  u64: 0n,
  short: '',
  long: '',
  ids: [0, 0, 0],
  bits: [false, false],
  bigs: [-(2n ** 63n), 0n],
};
const high: AllValue = {
  u8: 255,
  i8: 127,
  u16: 65535,
  i16: 32767,
  u32: 4294967295,
  i32: 2147483647,
  f32: 3.4028234663852886e38,
  f64: Number.MAX_VALUE,
  flag: true,
  i64: 2n ** 63n - 1n,
  u64: 2n ** 64n - 1n,
  short: 'ab€', // 2 + 3 = 5 bytes: at the limit
  long: 'é'.repeat(150), // exactly 300 bytes
  ids: [4294967295, 1, 2],
  bits: [true, false],
  bigs: [2n ** 63n - 1n, -1n],
};

describe('struct', () => {
  it('round-trips every field type at its boundaries, strings at their length limit', () => {
    for (const v of [low, high]) expect(All.decode(All.encode(v))).toEqual(v);
  });

  it('refuses integers outside their type, overflowing strings and arrays, and writes nothing of them', () => {
    const S = struct({ a: 'u8', b: 'i16', s: utf8(4), xs: array('u8', 2) });
    expect(S.decode(S.encode({ a: 255, b: -32768, s: 'abcd', xs: [1] }))).toEqual({
      a: 255,
      b: -32768,
      s: 'abcd',
      xs: [1, 0],
    });
    const overflow = expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW });
    const encodeFailed = expect.objectContaining({ code: OffHeapErrorCodes.ENCODE_FAILED });
    for (const bad of [{ a: 256 }, { a: -1 }, { b: 32768 }, { b: -32769 }, { xs: [0, 256] }]) {
      expect(() => S.encode({ a: 1, b: 1, s: '', xs: [], ...bad })).toThrow(overflow);
    }
    for (const bad of [{ a: 1.5 }, { b: Number.NaN }, { a: Number.POSITIVE_INFINITY }, { xs: [0.5] }]) {
      expect(() => S.encode({ a: 1, b: 1, s: '', xs: [], ...bad })).toThrow(encodeFailed);
    }
    const W = struct({ u: 'u32', i: 'i32', big: 'i64', ubig: 'u64' });
    const ok = { u: 2 ** 32 - 1, i: -(2 ** 31), big: -(2n ** 63n), ubig: 2n ** 64n - 1n };
    expect(W.decode(W.encode(ok))).toEqual(ok);
    for (const bad of [
      { u: 2 ** 33 },
      { u: 2 ** 32 },
      { i: 2 ** 31 },
      { big: 2n ** 70n },
      { big: 2n ** 63n },
      { ubig: -1n },
    ]) {
      expect(() => W.encode({ ...ok, ...bad })).toThrow(overflow);
    }
    // Through a view: refused, and the record keeps its bytes.
    const m = new OffHeapMap<string, unknown, typeof W.fields>({ struct: W, threads: 1 });
    m.set('k', ok);
    const v = m.view();
    expect(m.locate('k', v)).toBe(true);
    expect(() => {
      v.u = 2 ** 33;
    }).toThrow(overflow);
    expect(() => {
      v.big = 2n ** 70n;
    }).toThrow(overflow);
    expect(m.get('k')).toEqual(ok);
    expect(() => S.encode({ a: 1, b: 1, s: 'abcde', xs: [] })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }),
    );
    expect(() => S.encode({ a: 1, b: 1, s: 'é€', xs: [] })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }),
    );
    expect(() => S.encode({ a: 1, b: 1, s: '', xs: [1, 2, 3] })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }),
    );
    expect(() => S.encode({ a: '1' as unknown as number, b: 1, s: '', xs: [] })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.ENCODE_FAILED }),
    );
    expect(() => struct({ a: 'u128' as 'u8' })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
    );
    // Every member a view has (or inherits) is a name no field may take, or the field would hide it.
    for (const proto of [StructViewBase.prototype, StructViewCore.prototype, Object.prototype]) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        expect(() => struct({ [name]: 'u8' }), name).toThrow(
          expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
        );
      }
    }
    expect(() => utf8(0)).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }));
  });

  it('views read and write every field in place, and move between records by offset', () => {
    const map = new OffHeapMap<string, AllValue, typeof All.fields>({ struct: All });
    map.set('low', low).set('high', high);
    const v = map.view();
    expect(v.positioned).toBe(false);
    expect(() => v.u8).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.VIEW_NOT_POSITIONED }));
    expect(map.locate('high', v)).toBe(true);
    expect(v.toObject()).toEqual(high);
    expect([v.u8, v.i8, v.u16, v.i16, v.u32, v.i32, v.flag, v.i64, v.u64]).toEqual([
      255,
      127,
      65535,
      32767,
      4294967295,
      2147483647,
      true,
      2n ** 63n - 1n,
      2n ** 64n - 1n,
    ]);
    expect(v.short).toBe('ab€');
    expect(v.ids.get(0)).toBe(4294967295);
    expect(v.bigs.toArray()).toEqual([2n ** 63n - 1n, -1n]);
    expect(map.locate('low', v)).toBe(true);
    expect(v.i8).toBe(-128);
    expect(v.f64).toBe(-Number.MAX_VALUE);
    v.i8 = -1;
    v.short = 'xy';
    v.ids.set(1, 7);
    v.bits.assign([true, true]);
    v.u64 = 2n ** 64n - 1n;
    expect(() => (v.long = 'x'.repeat(301))).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }),
    );
    expect(() => v.ids.get(3)).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }));
    expect(map.get('low')).toEqual({
      ...low,
      i8: -1,
      short: 'xy',
      ids: [0, 7, 0],
      bits: [true, true],
      u64: 2n ** 64n - 1n,
    });
    expect(map.get('high')).toEqual(high); // the neighbour is untouched
    expect(map.locate('missing', v)).toBe(false);
    expect(v.key).toBe('low');
  });

  it('a view follows its key when space is reclaimed and fails once the key is gone', () => {
    const S = struct({ n: 'u32' });
    const map = new OffHeapMap<string, { n: number }, typeof S.fields>({ struct: S });
    map.set('a', { n: 1 });
    const v = map.view();
    map.locate('a', v);
    map.set('b', { n: 2 });
    map.delete('b'); // reclaims space: views re-check their record
    expect(v.n).toBe(1);
    map.delete('a');
    map.set('c', { n: 3 }); // reuses a's block
    expect(() => v.n).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.VIEW_NOT_POSITIONED }));
    expect(() => {
      v.n = 5;
    }).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.VIEW_NOT_POSITIONED }));
    expect(map.get('c')).toEqual({ n: 3 });
  });

  it('a refused in-place write changes nothing and leaves readers able to read', async () => {
    const S = struct({ n: 'u32', s: utf8(3) });
    const map = new OffHeapMap<string, { n: number; s: string }, typeof S.fields>({ struct: S });
    map.set('a', { n: 1, s: 'abc' });
    const reader = OffHeapMapReader.attach<string, { n: number; s: string }, typeof S.fields>(map.share());
    const v = map.view();
    map.locate('a', v);
    expect(() => v.assign({ n: 2, s: 'abcd' })).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }),
    );
    expect(() => {
      v.s = 'toolong';
    }).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.FIELD_OVERFLOW }));
    // a reader would spin forever on a key whose seqlock a failed write left odd
    expect(reader.get('a')).toEqual({ n: 1, s: 'abc' });
    await map.close();
    expect(() => v.assign({ n: 3, s: 'x' })).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    reader.close();
  });

  it('refuses struct values of the wrong size through setBytes', () => {
    const S = struct({ n: 'u32' });
    const map = new OffHeapMap<string, { n: number }, typeof S.fields>({ struct: S });
    expect(() => map.setBytes('a', new Uint8Array(5))).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
    );
    map.setBytes('a', S.encode({ n: 9 }));
    expect(map.get('a')).toEqual({ n: 9 });
    expect(() => new OffHeapMap().view()).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
    );
  });
});
