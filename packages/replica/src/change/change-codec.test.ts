import fc from 'fast-check';
import { Packr, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { ReplicaError, type ReplicaErrorCode } from '../errors.js';
import { type Change, deleteChange, setChange } from '../index.js';
import { decodeChanges, encodeChanges } from './change-codec.js';
import { changeLimits } from './change-format.js';

const bytes = (...b: number[]) => Uint8Array.from(b);
const hexBytes = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/\s+/g, ''), 'hex'));

/** The error `f` throws; fails the test when it returns. */
function thrown(f: () => unknown): ReplicaError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    return err as ReplicaError;
  }
  throw new Error('expected a ReplicaError');
}

/** The plain form of changes, to compare decoded views with what was encoded. */
const plain = (changes: readonly Change[]) =>
  changes.map((c) => (c.type === 'set' ? [c.type, c.key, Buffer.from(c.value).toString('hex')] : [c.type, c.key]));

/** msgpackr as a producer in another language would use it: plain arrays, strings, bins. */
const foreign = new Packr({ useRecords: false, moreTypes: false });

describe('encodeChanges / decodeChanges', () => {
  it('round-trips sets and deletes, in order, with values as views of the payload', () => {
    const changes = [
      setChange('user:1', bytes(0x81, 0xa1, 0x6e, 0xa3, 0x41, 0x64, 0x61)),
      deleteChange('user:2'),
      setChange('', new Uint8Array(0)),
      setChange('\uFEFFbom and ключ 🔑', bytes(1, 2, 3)),
      setChange('user:1', bytes(0xc0)),
    ];
    const payload = encodeChanges(changes);
    const decoded = decodeChanges(payload);
    expect(plain(decoded)).toEqual(plain(changes));
    const first = decoded[0] as { value: Uint8Array };
    expect(first.value.buffer).toBe(payload.buffer);
  });

  it('uses every width of array, str and bin at their boundaries', () => {
    for (const n of [15, 16, 0xffff, 0x10000]) {
      const changes = Array.from({ length: n }, (_, i) => deleteChange(`k${i}`));
      const limits = changeLimits({ maxChanges: 0x10000 });
      expect(decodeChanges(encodeChanges(changes, limits), limits)).toHaveLength(n);
    }
    const limits = changeLimits({ maxKeyBytes: 0x10000, maxValueBytes: 0x10000 });
    for (const n of [0, 31, 32, 0xff, 0x100, 0xffff, 0x10000]) {
      const change = setChange('k'.repeat(n), new Uint8Array(n).fill(7));
      const [decoded] = decodeChanges(encodeChanges([change], limits), limits);
      expect(decoded!.key.length).toBe(n);
      expect(decoded!.value!.length).toBe(n);
    }
  });

  it('reads what msgpackr writes in any width, and msgpackr reads what it writes', () => {
    const value = foreign.pack({ name: 'Ada', n: 1 });
    const payload = foreign.pack([
      [1, 'a', value],
      [2, 'b'],
    ]);
    expect(plain(decodeChanges(payload))).toEqual([
      ['set', 'a', Buffer.from(value).toString('hex')],
      ['delete', 'b'],
    ]);
    // The same changes with wide headers and a uint64 op, as another encoder may choose.
    const wide = hexBytes('dd00000001 dc0003 cf0000000000000001 db00000001 61 c600000001 ff');
    expect(plain(decodeChanges(wide))).toEqual([['set', 'a', 'ff']]);
    const ours = encodeChanges([setChange('k', value), deleteChange('d')]);
    expect(unpack(ours)).toEqual([
      [1, 'k', value],
      [2, 'd'],
    ]);
  });

  it('refuses to encode what it would refuse to decode', () => {
    const limits = changeLimits({ maxKeyBytes: 4, maxValueBytes: 4, maxChanges: 2 });
    const cases: [Change[], ReplicaErrorCode][] = [
      [[], 'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES'],
      [[deleteChange('a'), deleteChange('b'), deleteChange('c')], 'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES'],
      [[deleteChange('\uD800x')], 'HEAPLESS_ERR_REPLICA_INVALID_KEY'],
      [[deleteChange('ééé')], 'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE'],
      [[setChange('k', new Uint8Array(5))], 'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE'],
      [[{ type: 'set', key: 'k', value: 'text' } as unknown as Change], 'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT'],
      [[{ type: 'put', key: 'k' } as unknown as Change], 'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT'],
      [[{ type: 'delete', key: 7 } as unknown as Change], 'HEAPLESS_ERR_REPLICA_INVALID_KEY'],
    ];
    for (const [changes, code] of cases) expect(thrown(() => encodeChanges(changes, limits)).code).toBe(code);
  });

  it('rejects limits that are not positive integers', () => {
    expect(thrown(() => changeLimits({ maxChanges: 0 })).code).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    expect(thrown(() => changeLimits({ maxKeyBytes: 1.5 })).code).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    expect(thrown(() => changeLimits({ maxValueBytes: 2 ** 33 })).code).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
  });
});

describe('decodeChanges on hostile input', () => {
  // hex payload, expected code, a part of the expected message
  const cases: [string, string, ReplicaErrorCode, RegExp][] = [
    ['empty', '', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /truncated: the payload is missing \(offset 0 of 0\)/],
    ['nil', 'c0', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /the payload is a msgpack array, found type byte 0xc0/],
    ['a map', '81 a1 6b a1 76', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /found type byte 0x81/],
    ['a string', 'a3 61 62 63', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /found type byte 0xa3/],
    ['no change', '90', 'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES', /0 changes/],
    ['too many changes claimed', 'dd ffffffff', 'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES', /4294967295 changes/],
    [
      'truncated array16',
      'dc 00',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /truncated: the item at offset 0 needs 2 bytes, 1 are left/,
    ],
    ['a change that is not an array', '91 02', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /change 0 is a msgpack array/],
    ['changes missing', '92 92 02 a1 61', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /truncated: change 1 is missing/],
    ['unknown op', '91 92 03 a1 61', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /change 0: unknown op 3/],
    [
      'negative op',
      '91 92 ff a1 61',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /op of change 0 is a msgpack integer, found type byte 0xff/,
    ],
    ['int8 op -1', '91 92 d0 ff a1 61', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /unknown op -1/],
    ['huge uint64 op', '91 92 cf ffffffffffffffff a1 61', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /unknown op -1/],
    ['float op', '91 92 cb 3ff0000000000000 a1 61', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /found type byte 0xcb/],
    [
      'nested arrays',
      `${'91'.repeat(5000)}`,
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /op of change 0 is a msgpack integer/,
    ],
    [
      'a set without value',
      '91 92 01 a1 61',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /a set is \[1, key, value\], got 2 items/,
    ],
    [
      'a delete with a value',
      '91 93 02 a1 61 c4 00',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /a delete is \[2, key\], got 3 items/,
    ],
    [
      'a key as bin',
      '91 92 02 c4 01 61',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /change 0: a key is a msgpack str, found type byte 0xc4/,
    ],
    [
      'a value as str',
      '91 93 01 a1 61 a1 76',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /change 0: a value is a msgpack bin, found type byte 0xa1/,
    ],
    ['a value as nil', '91 93 01 a1 61 c0', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /found type byte 0xc0/],
    [
      'a value as extension',
      '91 93 01 a1 61 d4 01 00',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /found type byte 0xd4/,
    ],
    [
      'a timestamp value',
      '91 93 01 a1 61 d6 ff 00000000',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /found type byte 0xd6/,
    ],
    ['invalid UTF-8', '91 92 02 a1 ff', 'HEAPLESS_ERR_REPLICA_INVALID_KEY', /not valid UTF-8/],
    ['overlong UTF-8', '91 92 02 a2 c0 80', 'HEAPLESS_ERR_REPLICA_INVALID_KEY', /not valid UTF-8/],
    ['a surrogate in UTF-8', '91 92 02 a3 ed a0 80', 'HEAPLESS_ERR_REPLICA_INVALID_KEY', /not valid UTF-8/],
    ['a truncated key', '91 92 02 a5 61 62', 'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE', /needs 5 bytes, 2 are left/],
    [
      'a key over the limit',
      '91 92 02 db ffffffff',
      'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE',
      /key of 4294967295 bytes at offset 3/,
    ],
    [
      'a value over the limit',
      '91 93 01 a1 61 c6 ffffffff',
      'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE',
      /value of 4294967295 bytes/,
    ],
    [
      'a truncated value',
      '91 93 01 a1 61 c5 0100 00',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /needs 256 bytes, 1 are left/,
    ],
    [
      'a trailing byte',
      '91 92 02 a1 61 00',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /1 bytes after the last change \(offset 5 of 6\)/,
    ],
    [
      'two payloads',
      '91 92 02 a1 61 91 92 02 a1 62',
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      /5 bytes after the last change/,
    ],
  ];
  for (const [name, hex, code, message] of cases) {
    it(`${name} → ${code}`, () => {
      const err = thrown(() => decodeChanges(hexBytes(hex)));
      expect(err.code).toBe(code);
      expect(err.message).toMatch(message);
    });
  }

  it('never throws anything but a ReplicaError, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (input) => {
        try {
          decodeChanges(input);
        } catch (err) {
          if (!(err instanceof ReplicaError)) throw err;
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('decodes a damaged or cut valid payload to well-formed changes or a ReplicaError, nothing else', () => {
    const change = fc.oneof(
      fc.record({ type: fc.constant('set' as const), key: fc.string({ maxLength: 12 }), value: fc.uint8Array() }),
      fc.record({ type: fc.constant('delete' as const), key: fc.string({ maxLength: 12 }) }),
    );
    fc.assert(
      fc.property(
        fc.array(change, { minLength: 1, maxLength: 20 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (changes, where, flip) => {
          const payload = encodeChanges(changes as Change[]);
          expect(plain(decodeChanges(payload))).toEqual(plain(changes as Change[]));
          const damaged = Uint8Array.from(payload);
          damaged[where % damaged.length]! ^= flip;
          for (const input of [damaged, payload.subarray(0, where % payload.length)]) {
            try {
              // A flip inside a key or a value still decodes: to changes of the documented shape.
              for (const c of decodeChanges(input)) {
                expect(c.key.isWellFormed()).toBe(true);
                if (c.type === 'set') expect(c.value).toBeInstanceOf(Uint8Array);
                else expect([c.type, c.value]).toEqual(['delete', undefined]);
              }
            } catch (err) {
              if (!(err instanceof ReplicaError)) throw err;
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
