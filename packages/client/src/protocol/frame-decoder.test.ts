import fc from 'fast-check';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { FrameDecoder } from './frame-decoder.js';
import { FrameEncoder } from './frame-encoder.js';
import { HeaplessError } from './heapless-error.js';

const dec = new FrameDecoder();
const enc = new FrameEncoder();

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof HeaplessError) return e.code;
    throw e;
  }
  return undefined;
}

// [what, bytes, expected error code or undefined when the frame decodes]
const callCases: [string, Uint8Array, string | undefined][] = [
  [
    'good frame',
    enc.encodeDetached([
      [1, 'get', ['a']],
      [2, 'size', []],
    ]),
    undefined,
  ],
  ['empty frame', enc.encodeDetached([]), undefined],
  ['not msgpack', new Uint8Array([0xc1]), 'BAD_FRAME'],
  ['truncated', enc.encodeDetached([[1, 'get', ['abc']]]).subarray(0, 5), 'BAD_FRAME'],
  ['trailing bytes', Uint8Array.from([...enc.encodeDetached([]), 0x01]), 'BAD_FRAME'],
  ['not an array', pack({ id: 1 }), 'BAD_FRAME'],
  ['message not an array', pack([1]), 'BAD_FRAME'],
  ['message of two', pack([[1, 'get']]), 'BAD_FRAME'],
  ['id zero', pack([[0, 'get', []]]), 'BAD_FRAME'],
  ['negative id', pack([[-1, 'get', []]]), 'BAD_FRAME'],
  ['fractional id', pack([[1.5, 'get', []]]), 'BAD_FRAME'],
  ['id too big', pack([[2 ** 33, 'get', []]]), 'BAD_FRAME'],
  ['method not a string: left to the dispatcher', pack([[1, 7, []]]), undefined],
  ['args not an array: left to the dispatcher', pack([[1, 'get', 'a']]), undefined],
  ['too many calls', pack(Array.from({ length: 5 }, (_, i) => [i + 1, 'get', []])), 'TOO_MANY_CALLS'],
];

describe('FrameDecoder.decodeCalls', () => {
  for (const [what, bytes, code] of callCases) {
    it(what, () => expect(codeOf(() => dec.decodeCalls(bytes, 4))).toBe(code));
  }

  it('returns bin values as views of the frame, not copies', () => {
    const frame = enc.encodeDetached([[1, 'set', ['k', new Uint8Array([9, 8, 7])]]]);
    const [[, , args]] = dec.decodeCalls(frame, 10) as [[number, string, [string, Uint8Array]]];
    expect(args[1].buffer).toBe(frame.buffer);
    expect([...args[1]]).toEqual([9, 8, 7]);
  });
});

describe('FrameDecoder.decodeReplies', () => {
  it('accepts results and errors', () => {
    expect(
      dec.decodeReplies(
        pack([
          [1, 'v'],
          [2, 102, 'unknown method'],
          [0, { v: 1 }],
        ]),
      ),
    ).toHaveLength(3);
  });
  it('rejects an error without a numeric code', () => {
    expect(codeOf(() => dec.decodeReplies(pack([[1, 'x', 'y']])))).toBe('BAD_FRAME');
  });
  it("accepts a stream's items and end (id 0), and refuses other id-0 shapes", () => {
    expect(
      dec.decodeReplies(
        pack([
          [0, 1, [[7, 'k', null]]],
          [0, 0xffff_ffff, 411, 'the watcher fell behind'],
        ]),
      ),
    ).toHaveLength(2);
    for (const bad of [
      [0, 0, []], // stream 0 is no stream
      [0, -1, []],
      [0, 1.5, []],
      [0, 2 ** 32, []],
      [0, 1, 'not items'],
      [0, 1, 'code', 'message'],
      [0, 1, 411, 7],
      [0, 1, 411, 'm', 'extra'],
      [0],
    ]) {
      expect(codeOf(() => dec.decodeReplies(pack([bad])))).toBe('BAD_FRAME');
    }
  });
});

describe('FrameDecoder on arbitrary input', () => {
  it('either decodes or throws a HeaplessError, never anything else', () => {
    const frames = fc.oneof(
      fc.uint8Array({ maxLength: 256 }),
      fc.anything().map((v) => pack(v) as Uint8Array),
      fc
        .array(fc.tuple(fc.integer(), fc.oneof(fc.string(), fc.integer()), fc.anything()), { maxLength: 10 })
        .map((v) => pack(v) as Uint8Array),
    );
    fc.assert(
      fc.property(frames, (bytes) => {
        for (const f of [() => dec.decodeCalls(bytes, 8), () => dec.decodeReplies(bytes)]) {
          try {
            f();
          } catch (e) {
            expect(e).toBeInstanceOf(HeaplessError);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
