import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareInternalKeys, makeInternalKey, sequenceOf, userKeyOf, ValueKind } from '../base/internal-key.js';
import { LookupResult, Memtable } from './memtable.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

function add(m: Memtable, key: string, seq: number, value?: string): void {
  const k = enc.encode(key);
  const v = enc.encode(value ?? '');
  expect(m.hasRoom(k.length, v.length)).toBe(true);
  m.add(seq, value === undefined ? ValueKind.Deletion : ValueKind.Value, k, 0, k.length, v, 0, v.length);
}

function lookup(m: Memtable, key: string, seq: number): string | null | undefined {
  const k = enc.encode(key);
  const r = m.get(k, 0, k.length, seq);
  if (r === LookupResult.NotFound) return undefined;
  if (r === LookupResult.Deleted) return null;
  return dec.decode(m.bytes.subarray(m.valueOffset, m.valueOffset + m.valueLength));
}

describe('memtable', () => {
  it('keeps versions newest first and answers lookups as of a sequence', () => {
    const m = new Memtable(64 * 1024);
    add(m, 'b', 1, 'b1');
    add(m, 'a', 2, 'a2');
    add(m, 'b', 3);
    add(m, 'b', 4, 'b4');
    add(m, '', 5, 'empty');
    add(m, 'ab', 6, 'ab6');
    expect(m.dump()).toEqual(['@5=empty', 'a@2=a2', 'ab@6=ab6', 'b@4=b4', 'b@3 DEL', 'b@1=b1']);
    expect(lookup(m, 'b', 10)).toBe('b4');
    expect(lookup(m, 'b', 3)).toBe(null);
    expect(lookup(m, 'b', 2)).toBe('b1');
    expect(lookup(m, 'b', 0)).toBe(undefined);
    expect(lookup(m, 'a', 1)).toBe(undefined);
    expect(lookup(m, 'c', 10)).toBe(undefined);
    expect(lookup(m, '', 10)).toBe('empty');
  });

  it('answers gets at every sequence like a scan of the versions (point-get index and skiplist agree)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.stringMatching(/^[a-d]{0,3}$/), fc.option(fc.string({ maxLength: 3 }), { nil: undefined })),
          {
            maxLength: 200,
          },
        ),
        (ops) => {
          const m = new Memtable(256 * 1024);
          const versions: [string, number, string | undefined][] = [];
          ops.forEach(([k, v], i) => {
            add(m, k, i + 1, v);
            versions.push([k, i + 1, v]);
          });
          for (const k of ['', 'a', 'ab', 'dd', 'abc', 'zz']) {
            for (let seq = 0; seq <= ops.length + 1; seq += 1 + (seq >> 3)) {
              let want: string | null | undefined;
              for (const [vk, vs, vv] of versions) if (vk === k && vs <= seq) want = vv === undefined ? null : vv;
              expect(lookup(m, k, seq)).toBe(want);
            }
          }
        },
      ),
    );
  });

  // Random bytes, and keys of three byte values up to 12 long: these tie on the 8-byte prefix a node keeps (zero
  // padding included: a short key against a longer one of zero bytes) and are then told apart by their bytes.
  it.each([
    ['random bytes', fc.uint8Array({ maxLength: 6 })],
    [
      'keys that share prefixes',
      fc.array(fc.constantFrom(0, 1, 0xff), { maxLength: 12 }).map((b) => Uint8Array.from(b)),
    ],
  ])('iterates forward and backward, and seeks, in internal-key order (model check: %s)', (_name, keyArb) => {
    fc.assert(
      fc.property(fc.array(fc.tuple(keyArb, fc.boolean()), { maxLength: 300 }), (ops) => {
        const m = new Memtable(256 * 1024);
        const model: Uint8Array[] = [];
        ops.forEach(([key, isPut], i) => {
          const seq = i + 1;
          m.add(seq, isPut ? ValueKind.Value : ValueKind.Deletion, key, 0, key.length, key, 0, isPut ? key.length : 0);
          model.push(makeInternalKey(key, seq, isPut ? ValueKind.Value : ValueKind.Deletion));
        });
        model.sort(compareInternalKeys);
        const it = m.iterator();
        const fwd: Uint8Array[] = [];
        for (it.seekToFirst(); it.valid(); it.next()) fwd.push(it.key().slice());
        expect(fwd).toEqual(model);
        const back: Uint8Array[] = [];
        for (it.seekToLast(); it.valid(); it.prev()) back.push(it.key().slice());
        expect(back).toEqual([...model].reverse());
        for (const target of model.slice(0, 20)) {
          it.seek(target);
          expect(it.valid()).toBe(true);
          expect(compareInternalKeys(it.key(), target)).toBe(0);
          if (sequenceOf(target) > 0) {
            it.seek(makeInternalKey(userKeyOf(target), 0, ValueKind.Deletion));
            expect(it.valid() ? compareInternalKeys(it.key(), target) : 1).toBeGreaterThan(0);
          }
        }
        it.close();
      }),
    );
  });

  it('can be read from its shared buffers (what a worker sees)', () => {
    const m = new Memtable(4096);
    add(m, 'x', 1, 'y');
    add(m, 'w', 2, 'z');
    const copy = Memtable.fromShared(structuredClone(m.share()));
    expect(copy.dump()).toEqual(['w@2=z', 'x@1=y']);
  });

  it('reports when it is full and never writes past its arenas', () => {
    const m = new Memtable(4096);
    let n = 0;
    while (m.hasRoom(10, 100)) {
      add(m, `key${String(n).padStart(6, '0')}`.slice(0, 10), n + 1, 'v'.repeat(100));
      n++;
    }
    expect(n).toBeGreaterThan(10);
    expect(m.memoryUsage).toBeLessThanOrEqual(m.capacity);
    expect(m.dump().length).toBe(n);
    expect(m.hasRoom(0, Memtable.capacityFor(0, 0))).toBe(false);
  });
});

describe('memtable sequential-insert hint', () => {
  it('keeps order when runs of ascending keys are interleaved with keys that go before them', () => {
    const m = new Memtable(1 << 20);
    const expected: string[] = [];
    let seq = 1;
    for (let run = 0; run < 20; run++) {
      for (let i = 0; i < 50; i++) {
        const k = `r${String((run * 7919) % 20).padStart(2, '0')}-${String(i).padStart(3, '0')}`;
        add(m, k, seq++, 'v');
        expected.push(k);
      }
      add(m, `a${run}`, seq++, 'w'); // before everything: breaks the run
      expected.push(`a${run}`);
    }
    const got = m.dump().map((line) => line.slice(0, line.indexOf('@')));
    expect(got).toEqual([...expected].sort());
  });
});

describe('memtable arena reuse', () => {
  it("a new memtable takes over a retired one's arenas, empty, unless an iterator still reads them", () => {
    const old = new Memtable(8192);
    add(old, 'x', 1, 'y');
    const fresh = new Memtable(8192, undefined, old);
    expect(fresh.bytes).toBe(old.bytes);
    expect(fresh.dump()).toEqual([]);
    expect(lookup(fresh, 'x', 10)).toBe(undefined); // the point-get index starts empty too
    add(fresh, 'a', 2, 'b');
    expect(fresh.dump()).toEqual(['a@2=b']);
    expect(old.inUse).toBe(true); // retired: cannot be handed on twice

    const read = new Memtable(8192);
    add(read, 'k', 1, 'v');
    const it = read.iterator();
    expect(new Memtable(8192, undefined, read).bytes).not.toBe(read.bytes);
    it.close();
    it.close();
    expect(new Memtable(8192, undefined, read).bytes).toBe(read.bytes);
  });
});
