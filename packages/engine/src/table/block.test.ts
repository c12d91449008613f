import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CorruptionError } from '../base/errors.js';
import { compareInternalAt, compareInternalKeys, makeInternalKey, ValueKind } from '../base/internal-key.js';
import { Block } from './block.js';
import { BlockBuilder } from './block-builder.js';
import { BlockIterator } from './block-iterator.js';

const enc = new TextEncoder();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function entries(n: number): Array<[Uint8Array, Uint8Array]> {
  const out: Array<[Uint8Array, Uint8Array]> = [];
  for (let i = 0; i < n; i++) {
    const user = enc.encode(`key${String(i * 3).padStart(6, '0')}`);
    // Two versions of every third key: newest first.
    if (i % 3 === 0) out.push([makeInternalKey(user, 1000 + i, ValueKind.Value), enc.encode(`new${i}`)]);
    out.push([
      makeInternalKey(user, i, i % 7 === 0 ? ValueKind.Deletion : ValueKind.Value),
      enc.encode(`v${i}`.repeat(i % 5)),
    ]);
  }
  return out;
}

function build(es: Array<[Uint8Array, Uint8Array]>, interval: number): Block {
  const b = new BlockBuilder(interval, 16);
  for (const [k, v] of es) b.add(k, v);
  return new Block(b.finish().slice(), 'test.sst', 100);
}

describe('block', () => {
  for (const interval of [1, 2, 16, 1000]) {
    it(`round-trips forward and backward with restart interval ${interval}`, () => {
      const es = entries(300);
      const block = build(es, interval);
      const it = new BlockIterator(block);
      const seen: string[] = [];
      for (it.seekToFirst(); it.valid(); it.next()) seen.push(`${hex(it.key())}=${hex(it.value())}`);
      expect(seen).toEqual(es.map(([k, v]) => `${hex(k)}=${hex(v)}`));
      const back: string[] = [];
      for (it.seekToLast(); it.valid(); it.prev()) back.push(`${hex(it.key())}=${hex(it.value())}`);
      expect(back).toEqual(seen.slice().reverse());
    });

    it(`seeks to every key and between keys with restart interval ${interval}`, () => {
      const es = entries(200);
      const block = build(es, interval);
      const it = new BlockIterator(block);
      for (let i = 0; i < es.length; i++) {
        it.seek(es[i]![0]);
        expect(hex(it.key())).toBe(hex(es[i]![0]));
        // Between: the same user key at a sequence just above lands on this entry too (newer sorts first).
        const user = es[i]![0].subarray(0, es[i]![0].length - 8);
        it.seek(makeInternalKey(user, 5000, ValueKind.Value));
        const firstOfUser = es.findIndex(([k]) => hex(k.subarray(0, k.length - 8)) === hex(user));
        expect(hex(it.key())).toBe(hex(es[firstOfUser]![0]));
        // A user key between this one and the next ("keyNNNNNN" + "x").
        const between = makeInternalKey(Buffer.concat([user, enc.encode('x')]), 1, ValueKind.Value);
        it.seek(between);
        const want = es.find(([k]) => compareInternalKeys(k, between) >= 0);
        if (want === undefined) expect(it.valid()).toBe(false);
        else expect(hex(it.key())).toBe(hex(want[0]));
        // prev from a seek position reaches the previous entry.
        it.seek(es[i]![0]);
        it.prev();
        if (i === 0) expect(it.valid()).toBe(false);
        else expect(hex(it.key())).toBe(hex(es[i - 1]![0]));
      }
      it.seek(makeInternalKey(enc.encode('zzz'), 1, ValueKind.Value));
      expect(it.valid()).toBe(false);
      it.seek(makeInternalKey(enc.encode(''), 1, ValueKind.Value));
      expect(hex(it.key())).toBe(hex(es[0]![0]));
    });
  }

  it('handles an empty block', () => {
    const block = build([], 16);
    const it = new BlockIterator(block);
    it.seekToFirst();
    expect(it.valid()).toBe(false);
    it.seekToLast();
    expect(it.valid()).toBe(false);
    it.seek(makeInternalKey(enc.encode('a'), 1, ValueKind.Value));
    expect(it.valid()).toBe(false);
  });

  it('round-trips long keys and values (multi-byte varints)', () => {
    const es: Array<[Uint8Array, Uint8Array]> = [];
    for (let i = 0; i < 50; i++) {
      es.push([
        makeInternalKey(enc.encode(`${'p'.repeat(300)}${String(i).padStart(3, '0')}`), 1, ValueKind.Value),
        new Uint8Array(i * 100).fill(i),
      ]);
    }
    const block = build(es, 4);
    const it = new BlockIterator(block);
    let n = 0;
    for (it.seekToFirst(); it.valid(); it.next(), n++) {
      expect(hex(it.key())).toBe(hex(es[n]![0]));
      expect(hex(it.value())).toBe(hex(es[n]![1]));
    }
    expect(n).toBe(50);
  });

  for (const [name, byte] of [
    ['any bytes', fc.integer({ min: 0, max: 255 })],
    ['a 3-letter alphabet (long shared prefixes)', fc.integer({ min: 0, max: 2 })],
  ] as const) {
    it(`matches a sorted model under random keys, seeks and direction changes (${name})`, () => {
      fc.assert(
        fc.property(
          fc.uniqueArray(
            fc.tuple(
              fc.array(byte, { maxLength: 7 }).map((a) => Uint8Array.from(a)),
              fc.integer({ min: 0, max: 50 }),
            ),
            {
              maxLength: 80,
              selector: ([k, s]) => `${hex(k)}/${s}`,
            },
          ),
          fc.integer({ min: 1, max: 8 }),
          fc.array(
            fc.tuple(
              fc.array(byte, { maxLength: 7 }).map((a) => Uint8Array.from(a)),
              fc.integer({ min: 0, max: 50 }),
              fc.array(fc.boolean(), { maxLength: 6 }),
            ),
          ),
          (raw, interval, probes) => {
            const keys = raw.map(([k, s]) => makeInternalKey(k, s, ValueKind.Value)).sort(compareInternalKeys);
            const block = build(
              keys.map((k, i) => [k, enc.encode(String(i))]),
              interval,
            );
            const it = new BlockIterator(block);
            for (const [k, s, moves] of probes) {
              const t = makeInternalKey(k, s, ValueKind.Value);
              it.seek(t);
              let pos = keys.findIndex((x) => compareInternalKeys(x, t) >= 0);
              if (pos < 0) pos = keys.length;
              expect(it.valid()).toBe(pos < keys.length);
              for (const fwd of moves) {
                if (!it.valid()) break;
                expect(hex(it.key())).toBe(hex(keys[pos]!));
                if (fwd) {
                  it.next();
                  pos++;
                } else {
                  it.prev();
                  pos--;
                }
                expect(it.valid()).toBe(pos >= 0 && pos < keys.length);
              }
            }
          },
        ),
        { numRuns: 200 },
      );
    });
  }

  it('reports bad restart arrays and entries as corruption with file and offset', () => {
    expect(() => new Block(new Uint8Array([1, 2]), 'f.sst', 7)).toThrow(CorruptionError);
    expect(() => new Block(new Uint8Array([0, 0, 0, 0, 9, 0, 0, 0]), 'f.sst', 7)).toThrow(/f\.sst at offset 11/);
    const good = new BlockBuilder(16);
    good.add(makeInternalKey(enc.encode('abc'), 1, ValueKind.Value), enc.encode('v'));
    const bytes = good.finish().slice();
    bytes[1] = 200; // unshared length far past the block
    const it = new BlockIterator(new Block(bytes, 'f.sst', 1000));
    try {
      it.seekToFirst();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(CorruptionError);
      expect((e as CorruptionError).file).toBe('f.sst');
      expect((e as CorruptionError).offset).toBe(1000);
    }
  });

  it('compares internal keys in place like compareInternalKeys', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 5 }),
        fc.nat(300),
        fc.uint8Array({ maxLength: 5 }),
        fc.nat(300),
        (a, sa, b, sb) => {
          const ka = makeInternalKey(a, sa, ValueKind.Value);
          const kb = makeInternalKey(b, sb, ValueKind.Deletion);
          const padded = new Uint8Array(ka.length + 3);
          padded.set(ka, 3);
          expect(Math.sign(compareInternalAt(padded, 3, ka.length, kb, 0, kb.length))).toBe(
            Math.sign(compareInternalKeys(ka, kb)),
          );
        },
      ),
    );
  });
});
