import { type Infer, StructViewCore } from '@heapless/struct';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../protocol/error-codes.js';
import { HeaplessError } from '../protocol/heapless-error.js';
import { array, struct, utf8 } from './struct-layout.js';
import { StructViewBase } from './struct-view.js';

function code(f: () => unknown): ErrorCode | 'no error' {
  try {
    f();
  } catch (e) {
    if (e instanceof HeaplessError) return e.code;
    throw e;
  }
  return 'no error';
}

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

const All = struct({
  a: 'u8',
  b: 'i8',
  c: 'u16',
  d: 'i16',
  e: 'u32',
  f: 'i32',
  g: 'f32',
  h: 'f64',
  flag: 'bool',
  big: 'i64',
  ubig: 'u64',
  short: utf8(5),
  long: utf8(300),
  ids: array('u32', 3),
  bits: array('bool', 2),
  bigs: array('i64', 2),
});
type AllValue = Infer<typeof All>;

const sample: AllValue = {
  a: 255,
  b: -128,
  c: 65535,
  d: -32768,
  e: 4294967295,
  f: -2147483648,
  g: 1.5,
  h: -Number.MAX_VALUE,
  flag: true,
  big: -(2n ** 63n),
  ubig: 2n ** 64n - 1n,
  short: 'héllo'.slice(0, 4),
  long: '€'.repeat(100),
  ids: [1, 2, 3],
  bits: [true, false],
  bigs: [2n ** 63n - 1n, -1n],
};

describe('struct layout', () => {
  it('lays records out as @heapless/struct does (its tests hold the bytes to FORMAT.md)', () => {
    expect(All.size).toBe(381);
    expect(All.signature).toBe(
      'a:u8,b:i8,c:u16,d:i16,e:u32,f:i32,g:f32,h:f64,flag:bool,big:i64,ubig:u64,short:utf8(5),long:utf8(300),' +
        'ids:array(u32,3),bits:array(bool,2),bigs:array(i64,2)',
    );
    expect(
      hex(struct({ id: 'u32', name: utf8(5), score: array('i16', 2) }).encode({ id: 7, name: 'hé', score: [-1] })),
    ).toBe('07000000' + '0368c3a90000' + 'ffff0000');
  });

  it('refuses layouts it cannot lay out, with STRUCT_INVALID_LAYOUT', () => {
    const bad: (() => unknown)[] = [
      () => utf8(0),
      () => utf8(65536),
      () => utf8(1.5),
      () => array('u32', 0),
      () => array('u32', 65536),
      () => array('nope' as 'u8', 2),
      () => struct({}),
      () => struct({ x: 'u128' as 'u8' }),
      () => struct({ x: { kind: 'utf8', maxBytes: 70000 } as const }),
      () => struct({ x: { kind: 'array', element: 'u8', length: 0 } as const }),
      () => struct({ _x: 'u8' }),
      () => struct({ key: 'u8' }),
      () => struct({ positioned: 'u8' }),
      () => struct({ toObject: 'u8' }),
      () => struct({ assign: 'u8' }),
      () => struct({ constructor: 'u8' } as never),
      () => struct({ toString: 'u8' } as never),
      () => struct(null as never),
    ];
    for (const f of bad) expect(code(f), String(f)).toBe('STRUCT_INVALID_LAYOUT');
    // Every member a view has (or inherits) is a name no field may take, or the field would hide it.
    for (const proto of [StructViewBase.prototype, StructViewCore.prototype, Object.prototype]) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        expect(
          code(() => struct({ [name]: 'u8' })),
          name,
        ).toBe('STRUCT_INVALID_LAYOUT');
      }
    }
    expect(code(() => struct({ u8: 'u8', bytes: 'u8', name: utf8(1) }))).toBe('no error');
  });

  it('refuses values that do not fit, and writes nothing of them', () => {
    const T = struct({ n: 'u32', s: utf8(3), a: array('u8', 2), big: 'i64', ok: 'bool' });
    const good = { n: 1, s: 'abc', a: [1, 2], big: 1n, ok: true };
    const bytes = T.encode(good);
    const before = hex(bytes);
    const v = T.view(bytes);
    const refused: [unknown, ErrorCode][] = [
      [{ ...good, n: '1' }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, big: 1 }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, ok: 1 }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, s: 7 }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, a: 'ab' }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, a: [1, 'x'] }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, s: 'abcd' }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, s: 'aé' }, 'no error' as ErrorCode],
      [{ ...good, s: 'aéb' }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, a: [1, 2, 3] }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, n: 2 ** 33 }, 'STRUCT_FIELD_OVERFLOW'], // used to store 0
      [{ ...good, n: 2 ** 32 }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, n: -1 }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, n: 2 ** 32 - 1 }, 'no error' as ErrorCode],
      [{ ...good, n: 1.5 }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, n: Number.NaN }, 'STRUCT_INVALID_VALUE'],
      [{ ...good, a: [1, 256] }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, big: 2n ** 70n }, 'STRUCT_FIELD_OVERFLOW'], // used to store 0
      [{ ...good, big: 2n ** 63n }, 'STRUCT_FIELD_OVERFLOW'],
      [{ ...good, big: -(2n ** 63n) - 1n }, 'STRUCT_FIELD_OVERFLOW'],
      [null, 'STRUCT_INVALID_VALUE'],
      [42, 'STRUCT_INVALID_VALUE'],
    ];
    for (const [value, want] of refused) {
      expect(
        code(() => T.encode(value as never)),
        JSON.stringify(value, (_, x) => String(x)),
      ).toBe(want);
      if (want !== ('no error' as ErrorCode)) {
        expect(code(() => v.assign(value as never))).toBe(want);
        expect(hex(bytes)).toBe(before);
      }
    }
    expect(code(() => ((v as unknown as { n: unknown }).n = 'x'))).toBe('STRUCT_INVALID_VALUE');
    expect(code(() => (v.s = 'abcd'))).toBe('STRUCT_FIELD_OVERFLOW');
    expect(code(() => v.a.assign([1, 2, 3]))).toBe('STRUCT_FIELD_OVERFLOW');
    expect(code(() => v.a.get(2))).toBe('STRUCT_INVALID_VALUE');
    expect(code(() => v.a.get(-1))).toBe('STRUCT_INVALID_VALUE');
    expect(code(() => v.a.set(0.5, 1))).toBe('STRUCT_INVALID_VALUE');
    expect(code(() => v.a.set(0, 1n as never))).toBe('STRUCT_INVALID_VALUE');
    expect(code(() => v.a.set(0, 300))).toBe('STRUCT_FIELD_OVERFLOW');
    expect(code(() => (v.n = 2 ** 33))).toBe('STRUCT_FIELD_OVERFLOW');
    expect(code(() => (v.big = 2n ** 70n))).toBe('STRUCT_FIELD_OVERFLOW');
    expect(hex(bytes)).toBe(before);
  });

  it('refuses too few bytes with STRUCT_SIZE_MISMATCH', () => {
    const T = struct({ n: 'u32' });
    expect(code(() => T.view(new Uint8Array(3)))).toBe('STRUCT_SIZE_MISMATCH');
    expect(code(() => T.view(new Uint8Array(8), 5))).toBe('STRUCT_SIZE_MISMATCH');
    expect(code(() => T.decode(new Uint8Array(3)))).toBe('STRUCT_SIZE_MISMATCH');
    expect(code(() => T.encodeInto({ n: 1 }, new Uint8Array(6), 3))).toBe('STRUCT_SIZE_MISMATCH');
    expect(code(() => T.encodeInto({ n: 1 }, new Uint8Array(6), 2))).toBe('no error');
  });
});

describe('struct views', () => {
  it('read each field in place, from a record in the middle of a larger buffer', () => {
    const buf = new Uint8Array(All.size + 17);
    All.encodeInto(sample, buf, 9);
    const v = All.view(buf.subarray(4), 5);
    expect(v.a).toBe(255);
    expect(v.b).toBe(-128);
    expect(v.c).toBe(65535);
    expect(v.d).toBe(-32768);
    expect(v.e).toBe(4294967295);
    expect(v.f).toBe(-2147483648);
    expect(v.g).toBe(1.5);
    expect(v.h).toBe(-Number.MAX_VALUE);
    expect(v.flag).toBe(true);
    expect(v.big).toBe(-(2n ** 63n));
    expect(v.ubig).toBe(2n ** 64n - 1n);
    expect(v.short).toBe('héll');
    expect(v.long).toBe('€'.repeat(100));
    expect(v.ids.length).toBe(3);
    expect(v.ids.get(2)).toBe(3);
    expect(v.ids.toArray()).toEqual([1, 2, 3]);
    expect(v.bits.toArray()).toEqual([true, false]);
    expect(v.bigs.get(0)).toBe(2n ** 63n - 1n);
    expect(v.toObject()).toEqual(sample);
    expect(v.key).toBeUndefined();
    expect(All.bytesOf(v).buffer).toBe(buf.buffer);
    expect(All.bytesOf(v).byteOffset).toBe(9);
  });

  it('write each field in place, in the bytes they view', () => {
    const buf = new Uint8Array(All.size + 3);
    const v = All.view(buf, 3);
    v.assign(sample);
    expect(All.decode(buf, 3)).toEqual(sample);
    v.e = 4294967295;
    v.short = 'ab';
    v.long = 'x'.repeat(300);
    v.ids.set(1, 99);
    v.bits.assign([false]);
    v.bigs.assign([5n]);
    v.flag = false;
    v.big = -(2n ** 63n);
    expect(All.decode(buf, 3)).toEqual({
      ...sample,
      e: 4294967295,
      short: 'ab',
      long: 'x'.repeat(300),
      ids: [1, 99, 3],
      bits: [false, false],
      bigs: [5n, 0n],
      flag: false,
      big: -(2n ** 63n),
    });
    // The string's unused bytes are zeroed, so equal values are equal bytes.
    const fresh = All.encode(All.decode(buf, 3));
    expect(hex(All.bytesOf(v))).toBe(hex(fresh));
    expect([...buf.subarray(0, 3)]).toEqual([0, 0, 0]);
  });

  it('made without bytes, view a zeroed record of their own', () => {
    const T = struct({ id: 'u32', name: utf8(8), xs: array('f64', 2) });
    const v = T.view();
    expect(v.toObject()).toEqual({ id: 0, name: '', xs: [0, 0] });
    v.id = 9;
    v.name = 'nine';
    expect(T.decode(T.bytesOf(v))).toEqual({ id: 9, name: 'nine', xs: [0, 0] });
    expect(T.isView(v)).toBe(true);
    expect(T.isView(struct({ id: 'u32', name: utf8(8), xs: array('f64', 2) }).view())).toBe(true);
    expect(T.isView(struct({ id: 'i32', name: utf8(8), xs: array('f64', 2) }).view())).toBe(false);
    expect(T.isView({ id: 9 })).toBe(false);
  });

  it('cut a length prefix beyond the field and replace invalid UTF-8', () => {
    const T = struct({ s: utf8(4), t: utf8(20) });
    const b = new Uint8Array(T.size);
    b.set([200, 0x61, 0x62, 0x63, 0x64], 0); // prefix 200 > 4
    b.set([3, 0x61, 0xff, 0x62], 5);
    const v = T.view(b);
    expect(v.s).toBe('abcd');
    expect(v.t).toBe('a\ufffdb');
    b.set([18, ...new TextEncoder().encode('0123456789abcdef'), 0xc3, 0xa9], 5); // long, non-ASCII at the end
    expect(v.t).toBe('0123456789abcdefé');
  });

  it('agree with encode/decode on any value (property)', () => {
    const T = struct({ n: 'i32', s: utf8(12), xs: array('u16', 4), big: 'u64', f: 'f64' });
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.string({ maxLength: 12, unit: 'grapheme' }).filter((s) => new TextEncoder().encode(s).length <= 12),
        fc.array(fc.integer({ min: 0, max: 65535 }), { maxLength: 4 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.double({ noNaN: true }),
        (n, s, xs, big, f) => {
          const value = { n, s, xs, big, f };
          const bytes = T.encode(value);
          const want = { ...value, xs: [...xs, 0, 0, 0, 0].slice(0, 4) };
          expect(T.decode(bytes)).toEqual(want);
          const v = T.view(bytes);
          expect([v.n, v.s, v.xs.toArray(), v.big, v.f]).toEqual([n, s, want.xs, big, f]);
          const copy = T.view();
          copy.assign(v.toObject());
          expect(hex(T.bytesOf(copy))).toBe(hex(bytes));
        },
      ),
      { numRuns: 300 },
    );
  });
});
