import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayType, type FieldSpec, utf8Type } from './field-type.js';
import type { StructErrors } from './struct-errors.js';
import { isReservedFieldName, StructLayout } from './struct-layout.js';
import { textDecoderReader } from './utf8.js';

/** Each refusal as an error whose message starts with its kind, so a test can tell the four apart. */
class Refusal extends Error {
  constructor(
    readonly kind: keyof StructErrors,
    message: string,
  ) {
    super(message);
  }
}
const errors: StructErrors = {
  layout: (m) => new Refusal('layout', m),
  value: (m) => new Refusal('value', m),
  overflow: (m) => new Refusal('overflow', m),
  size: (m) => new Refusal('size', m),
};
const bindings = { errors, readUtf8: textDecoderReader(new TextDecoder()) };
const struct = <F extends FieldSpec>(fields: F) => new StructLayout(fields, bindings);
const utf8 = (n: number) => utf8Type(n, errors);
const array = <E extends Parameters<typeof arrayType>[0]>(e: E, n: number) => arrayType(e, n, errors);

function kind(f: () => unknown): keyof StructErrors | 'none' {
  try {
    f();
  } catch (e) {
    if (e instanceof Refusal) return e.kind;
    throw e;
  }
  return 'none';
}
const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

describe('StructLayout', () => {
  it('packs fields in declaration order without padding, and writes the signature', () => {
    const s = struct({ a: 'u8', b: 'f64', c: utf8(3), d: array('u16', 2), e: utf8(256), f: 'bool', g: 'i64' });
    expect(s.layout.map((f) => [f.name, f.offset, f.size])).toEqual([
      ['a', 0, 1],
      ['b', 1, 8],
      ['c', 9, 4],
      ['d', 13, 4],
      ['e', 17, 258],
      ['f', 275, 1],
      ['g', 276, 8],
    ]);
    expect(s.size).toBe(284);
    expect(s.signature).toBe('a:u8,b:f64,c:utf8(3),d:array(u16,2),e:utf8(256),f:bool,g:i64');
  });

  // Each case: layout, value, the bytes FORMAT.md says it is.
  const cases: [string, StructLayout<FieldSpec>, unknown, string][] = [
    [
      'the FORMAT.md example',
      struct({ id: 'u32', name: utf8(5), score: array('i16', 2) }),
      { id: 7, name: 'hé', score: [-1] },
      '07000000' + '0368c3a90000' + 'ffff0000',
    ],
    ['a u16 prefix above 255', struct({ s: utf8(256) }), { s: 'ab' }, `0200${'6162'}${'00'.repeat(254)}`],
    ['integers at their limits', struct({ x: 'u8', y: 'i16' }), { x: 255, y: -32768 }, 'ff' + '0080'],
    ['a lone surrogate as U+FFFD', struct({ s: utf8(4) }), { s: '\ud800' }, '03efbfbd00'],
    ['a surrogate pair as 4 bytes', struct({ s: utf8(4) }), { s: '😀' }, '04f09f9880'],
    ['u64 and bool', struct({ u: 'u64', b: 'bool' }), { u: 2n ** 64n - 2n, b: true }, 'feffffffffffffff01'],
    ['f32 and f64', struct({ f: 'f32', d: 'f64' }), { f: -2, d: 0.5 }, '000000c0' + '000000000000e03f'],
    [
      'missing array elements as zeros',
      struct({ b: array('bool', 3), x: array('u64', 2) }),
      { b: [true], x: [1n] },
      '010000' + '0100000000000000' + '0000000000000000',
    ],
  ];
  it.each(cases)('encodes %s to the documented bytes, and decodes them back', (_, layout, value, bytes) => {
    expect(hex(layout.encode(value as never))).toBe(bytes);
    const back = layout.decode(Buffer.from(bytes, 'hex'));
    expect(hex(layout.encode(back))).toBe(bytes);
  });

  it('refuses what it cannot lay out, as a layout error', () => {
    const bad: (() => unknown)[] = [
      () => utf8(0),
      () => utf8(65536),
      () => utf8(1.5),
      () => array('u32', 0),
      () => array('u32', 65536),
      () => array('nope' as 'u8', 2),
      () => struct({}),
      () => struct(null as never),
      () => struct({ x: 'u128' as 'u8' }),
      () => struct({ x: { kind: 'utf8', maxBytes: 70000 } as const }),
      () => struct({ x: { kind: 'array', element: 'u8', length: 0 } as const }),
      () => struct({ x: { kind: 'array', element: 'u8', length: 1.5 } as const }),
      () => struct({ _x: 'u8' }),
      () => struct({ key: 'u8' }),
      () => struct({ positioned: 'u8' }),
      () => struct({ toObject: 'u8' }),
      () => struct({ assign: 'u8' }),
      () => struct({ constructor: 'u8' } as never),
      () => struct({ hasOwnProperty: 'u8' } as never),
    ];
    for (const f of bad) expect(kind(f), String(f)).toBe('layout');
    expect(kind(() => struct({ u8: 'u8', bytes: 'u8', name: utf8(1), keys: 'u8' }))).toBe('none');
    expect(isReservedFieldName('__proto__')).toBe(true);
    expect(isReservedFieldName('value')).toBe(false);
  });

  it('refuses values that do not fit, each as its kind, and writes nothing of them', () => {
    const T = struct({ n: 'u32', s: utf8(3), a: array('u8', 2), big: 'i64', ok: 'bool', f: 'f32' });
    const good = { n: 1, s: 'abc', a: [1, 2], big: 1n, ok: true, f: 0.5 };
    const bytes = new Uint8Array(T.size + 2);
    T.encodeInto(good, bytes, 1);
    const before = hex(bytes);
    const refused: [unknown, keyof StructErrors | 'none'][] = [
      [{ ...good, n: '1' }, 'value'],
      [{ ...good, big: 1 }, 'value'],
      [{ ...good, ok: 1 }, 'value'],
      [{ ...good, f: 1n }, 'value'],
      [{ ...good, s: 7 }, 'value'],
      [{ ...good, a: 'ab' }, 'value'],
      [{ ...good, a: [1, 'x'] }, 'value'],
      [{ ...good, n: 1.5 }, 'value'],
      [{ ...good, n: Number.NaN }, 'value'],
      [{ ...good, n: Number.POSITIVE_INFINITY }, 'value'],
      [{ ...good, s: 'abcd' }, 'overflow'],
      [{ ...good, s: 'aé' }, 'none'],
      [{ ...good, s: 'aéb' }, 'overflow'],
      [{ ...good, a: [1, 2, 3] }, 'overflow'],
      [{ ...good, a: new Uint8Array(2) }, 'none'],
      [{ ...good, n: 2 ** 32 }, 'overflow'],
      [{ ...good, n: -1 }, 'overflow'],
      [{ ...good, n: 2 ** 32 - 1 }, 'none'],
      [{ ...good, a: [1, 256] }, 'overflow'],
      [{ ...good, big: 2n ** 63n }, 'overflow'],
      [{ ...good, big: -(2n ** 63n) - 1n }, 'overflow'],
      [{ ...good, f: Number.NaN }, 'none'],
      [null, 'value'],
      [42, 'value'],
    ];
    for (const [value, want] of refused) {
      const copy = bytes.slice();
      expect(
        kind(() => T.encodeInto(value as never, copy, 1)),
        JSON.stringify(value, (_, x) => String(x)),
      ).toBe(want);
      if (want !== 'none') expect(hex(copy)).toBe(before);
    }
  });

  it('says which end of its type an integer passed, for every integer type', () => {
    const ends: [string, number | bigint, number | bigint][] = [
      ['u8', 0, 255],
      ['i8', -128, 127],
      ['u16', 0, 65535],
      ['i16', -32768, 32767],
      ['u32', 0, 4294967295],
      ['i32', -2147483648, 2147483647],
      ['u64', 0n, 2n ** 64n - 1n],
      ['i64', -(2n ** 63n), 2n ** 63n - 1n],
    ];
    const message = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (e) {
        return `${(e as Refusal).kind}: ${(e as Error).message}`;
      }
    };
    for (const [type, lo, hi] of ends) {
      const T = struct({ x: type as 'u8' });
      const one = typeof lo === 'bigint' ? 1n : 1;
      const encode = (x: number | bigint) => message(() => T.encode({ x } as never));
      const range = `(range ${lo}..${hi})`;
      expect(encode(lo)).toBe('accepted');
      expect(encode(hi)).toBe('accepted');
      expect(encode((lo as number) - (one as number))).toBe(
        `overflow: struct field x got ${(lo as number) - (one as number)}, less than ${type}'s minimum ${lo} ${range}`,
      );
      expect(encode((hi as number) + (one as number))).toBe(
        `overflow: struct field x got ${(hi as number) + (one as number)}, more than ${type}'s maximum ${hi} ${range}`,
      );
    }
  });

  it('refuses too few bytes as a size error', () => {
    const T = struct({ n: 'u32' });
    expect(kind(() => T.decode(new Uint8Array(3)))).toBe('size');
    expect(kind(() => T.decode(new Uint8Array(8), 5))).toBe('size');
    expect(kind(() => T.decode(new Uint8Array(8), -1))).toBe('size');
    expect(kind(() => T.encodeInto({ n: 1 }, new Uint8Array(6), 3))).toBe('size');
    expect(kind(() => T.encodeInto({ n: 1 }, new Uint8Array(6), 2))).toBe('none');
    expect(T.decode(new Uint8Array([9, 1, 0, 0, 0]), 1)).toEqual({ n: 1 });
  });

  it('cuts a length prefix beyond its field and reads invalid UTF-8 as U+FFFD', () => {
    const T = struct({ s: utf8(4), t: utf8(20) });
    const b = new Uint8Array(T.size);
    b.set([200, 0x61, 0x62, 0x63, 0x64], 0); // prefix 200 > 4
    b.set([3, 0x61, 0xff, 0x62], 5);
    expect(T.decode(b)).toEqual({ s: 'abcd', t: 'a\ufffdb' });
  });

  it('decodes what it encodes, for any fitting value (property)', () => {
    const T = struct({ n: 'i32', s: utf8(12), xs: array('u16', 4), big: 'u64', f: 'f64', b: array('bool', 2) });
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.string({ maxLength: 12, unit: 'grapheme' }).filter((s) => new TextEncoder().encode(s).length <= 12),
        fc.array(fc.integer({ min: 0, max: 65535 }), { maxLength: 4 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.double({ noNaN: true }),
        fc.array(fc.boolean(), { maxLength: 2 }),
        (n, s, xs, big, f, b) => {
          const bytes = T.encode({ n, s, xs, big, f, b });
          expect(T.decode(bytes)).toEqual({
            n,
            s,
            xs: [...xs, 0, 0, 0, 0].slice(0, 4),
            big,
            f,
            b: [...b, false, false].slice(0, 2),
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});
