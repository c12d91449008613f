/**
 * The client's struct layout (packages/client/src/struct/) against offheap's (packages/offheap/src/struct.ts):
 * records written by one side's encoder or views are read by the other's, over every field type and its edges.
 * The server stores a struct collection's values as the client sent them, so this is what makes a client view
 * of an `OffHeapMap` struct record (and the reverse) mean the same thing.
 */
import * as client from '@heapless/client/struct';
import * as offheap from '@heapless/offheap';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';

type Loose = Record<string, unknown>;

/** The same spec, once with the client's type constructors and once with offheap's. */
function specs(u: typeof client.utf8, a: typeof client.array) {
  return {
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
    short: u(5),
    long: u(300),
    ids: a('u32', 3),
    bytes: a('u8', 2),
    signed: a('i16', 2),
    bits: a('bool', 2),
    bigs: a('i64', 2),
    ubigs: a('u64', 1),
    floats: a('f32', 2),
    doubles: a('f64', 1),
  } as const;
}
const C = client.struct(specs(client.utf8, client.array));
const O = offheap.struct(specs(offheap.utf8 as typeof client.utf8, offheap.array as typeof client.array));
type Value = client.Infer<typeof C>;

const low: Value = {
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
  bytes: [0, 0],
  signed: [-32768, -1],
  bits: [false, false],
  bigs: [-(2n ** 63n), -1n],
  ubigs: [0n],
  floats: [-0, Number.NEGATIVE_INFINITY],
  doubles: [Number.MIN_VALUE],
};
const high: Value = {
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
  short: 'ab€', // 2 + 3 bytes: at the limit
  long: '😀'.repeat(75), // 4-byte sequences, exactly 300 bytes
  ids: [4294967295, 1, 2],
  bytes: [255, 128],
  signed: [32767, 0],
  bits: [true, true],
  bigs: [2n ** 63n - 1n, 0n],
  ubigs: [2n ** 64n - 1n],
  floats: [1.5, Number.POSITIVE_INFINITY],
  doubles: [Number.NaN],
};
const mixed: Value = {
  ...high,
  short: 'é€', // 2 + 3
  long: `${'é'.repeat(149)}a`, // 299 bytes, odd length
  ids: [7], // the rest zero
  bits: [true],
  floats: [0.1], // rounded to f32 on both sides
};
/** Strings both sides replace the same way: a lone surrogate is written as U+FFFD. */
const replacing = {
  ...low,
  short: '\ud800x', // lone surrogate: U+FFFD, 3 + 1 bytes
  long: 'a\udc00b',
} as Value;

const cases: [string, Value][] = [
  ['low', low],
  ['high', high],
  ['mixed', mixed],
  ['replacing', replacing],
];

const map = new offheap.OffHeapMap<string, Loose, typeof O.fields>({ struct: O as never });
afterAll(() => map.close());

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const fieldNames = C.layout.map((f) => f.name);

/** Writes `value` field by field through an offheap view of `key`'s record; returns the stored bytes. */
function writeWithOffheapView(key: string, value: Value): Uint8Array {
  map.setBytes(key, new Uint8Array(O.size));
  const v = map.view() as unknown as Loose & offheap.StructView<typeof O.fields>;
  expect(map.locate(key, v as never)).toBe(true);
  const src = value as Loose;
  for (const name of fieldNames) {
    const x = src[name];
    if (Array.isArray(x)) (v[name] as { assign(a: unknown[]): void }).assign(x);
    else v[name] = x;
  }
  return map.getBytes(key)!;
}

/** Writes `value` field by field through a client view of a new record; returns its bytes. */
function writeWithClientView(value: Value): Uint8Array {
  const v = C.view() as unknown as Loose;
  const src = value as Loose;
  for (const name of fieldNames) {
    const x = src[name];
    if (Array.isArray(x)) (v[name] as { assign(a: unknown[]): void }).assign(x);
    else v[name] = x;
  }
  return C.bytesOf(v as never);
}

/** Every field as read through a view (arrays through their accessors). */
function readView(v: Loose): Loose {
  const out: Loose = {};
  for (const name of fieldNames) {
    const x = v[name];
    out[name] = typeof x === 'object' && x !== null ? (x as { toArray(): unknown[] }).toArray() : x;
  }
  return out;
}

describe('client and offheap struct layouts', () => {
  it('agree on sizes, offsets and signature, from either side’s type constructors', () => {
    expect(C.size).toBe(O.size);
    expect(C.signature).toBe(O.signature);
    expect(C.layout).toEqual(O.layout);
    // A spec is plain data: each side's struct() takes the other's fields.
    expect(client.struct(O.fields as typeof C.fields).signature).toBe(O.signature);
    expect(offheap.struct(C.fields as never).signature).toBe(C.signature);
  });

  it.each(cases)('encode the %s record to the same bytes', (_, value) => {
    const ours = C.encode(value);
    expect(hex(ours)).toBe(hex(O.encode(value as never)));
    expect(C.decode(ours)).toEqual(O.decode(ours));
  });

  it.each(cases)('read through client views what offheap views wrote (%s)', (name, value) => {
    const stored = writeWithOffheapView(`o:${name}`, value);
    const expected = O.decode(O.encode(value as never)) as Loose;
    const v = C.view(stored) as unknown as Loose;
    expect(readView(v)).toEqual(expected);
    expect(C.decode(stored)).toEqual(expected);
    expect(hex(stored)).toBe(hex(C.encode(value)));
  });

  it.each(cases)('read through offheap views what client views wrote (%s)', (name, value) => {
    const bytes = writeWithClientView(value);
    expect(hex(bytes)).toBe(hex(O.encode(value as never)));
    map.setBytes(`c:${name}`, bytes);
    const v = map.view() as unknown as Loose;
    expect(map.locate(`c:${name}`, v as never)).toBe(true);
    const expected = C.decode(C.encode(value)) as Loose;
    expect(readView(v)).toEqual(expected);
    expect(map.get(`c:${name}`)).toEqual(expected);
  });

  it('accept and refuse the same values: strings and arrays at and one past their limit, wrong types', () => {
    const refused: Loose[] = [
      { ...high, short: 'abc€' }, // 6 bytes in utf8(5)
      { ...high, short: '😀x' }, // 4 + 1 bytes: at the limit, accepted by both
      { ...high, short: '😀xy' }, // 4 + 2 bytes
      { ...high, long: `${'😀'.repeat(75)}a` },
      { ...high, ids: [1, 2, 3, 4] },
      { ...high, u64: 1 },
      { ...high, flag: 1 },
      { ...high, i32: 1n },
      // Integers that do not fit their type: both refuse (they used to wrap), and non-integers too.
      { ...high, u8: 256 },
      { ...high, i8: -129 },
      { ...high, u16: -1 },
      { ...high, i16: 32768 },
      { ...high, u32: 2 ** 33 },
      { ...high, i32: 2 ** 31 },
      { ...high, i64: 2n ** 63n },
      { ...high, i64: -(2n ** 70n) },
      { ...high, u64: -1n },
      { ...high, u64: 2n ** 64n },
      { ...high, ids: [2 ** 32] },
      { ...high, bytes: [-1] },
      { ...high, signed: [40000] },
      { ...high, bigs: [2n ** 63n] },
      { ...high, ubigs: [-1n] },
      { ...high, u8: 1.5 },
      { ...high, i32: Number.NaN },
      { ...high, ids: [Number.POSITIVE_INFINITY] },
    ];
    for (const value of refused) {
      let ours: unknown;
      let theirs: unknown;
      try {
        C.encode(value as Value);
      } catch (e) {
        ours = e;
      }
      try {
        O.encode(value as never);
      } catch (e) {
        theirs = e;
      }
      expect(ours === undefined, String(value.short)).toBe(theirs === undefined);
      if (ours !== undefined) {
        // Same kind of refusal, each in its own package's codes.
        const kind = (ours as { code: string }).code === 'STRUCT_FIELD_OVERFLOW' ? 'OVERFLOW' : 'ENCODE';
        expect((theirs as { code: string }).code).toContain(kind);
      }
    }
  });

  it('decode any bytes alike: damaged length prefixes, invalid UTF-8, any bit pattern (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: C.size, maxLength: C.size }), (bytes) => {
        expect(C.decode(bytes)).toEqual(O.decode(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('encode any fitting value alike (property)', () => {
    const S = { n: 'i32', s: client.utf8(10), xs: client.array('i64', 3), f: 'f32' } as const;
    const Cs = client.struct(S);
    const Os = offheap.struct(S as never);
    fc.assert(
      fc.property(
        fc.integer(),
        fc.string({ maxLength: 10, unit: 'binary' }).filter((s) => utf8Bytes(s) <= 10),
        fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { maxLength: 3 }),
        fc.double(),
        (n, s, xs, f) => {
          const value = { n, s, xs, f };
          expect(hex(Cs.encode(value))).toBe(hex(Os.encode(value as never)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('client and offheap struct integers', () => {
  it('refuse exactly the same integers, each side with its own code (property)', () => {
    const kinds = ['u8', 'i8', 'u16', 'i16', 'u32', 'i32'] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...kinds),
        fc.oneof(fc.integer({ min: -(2 ** 34), max: 2 ** 34 }), fc.double(), fc.constantFrom(255, 256, -1, 2 ** 32)),
        fc.constantFrom('i64', 'u64'),
        fc.bigInt({ min: -(2n ** 66n), max: 2n ** 66n }),
        (t, n, bt, b) => {
          const spec = { n: t, b: bt } as const;
          const value = { n, b };
          const outcome = (f: () => unknown) => {
            try {
              return hex(f() as Uint8Array);
            } catch (e) {
              return (e as { code: string }).code.includes('OVERFLOW') ? 'overflow' : 'invalid';
            }
          };
          expect(outcome(() => client.struct(spec).encode(value))).toBe(
            outcome(() => offheap.struct(spec as never).encode(value as never)),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});

function utf8Bytes(s: string): number {
  return new TextEncoder().encode(s).length;
}
