import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { OffHeapMapReader } from '../shared/offheap-reader.js';
import { struct } from '../struct.js';
import { OffHeapMap } from './offheap-map.js';

describe('OffHeapMap (memory-only)', () => {
  it('behaves like a Map for get/has/set/delete/size and iteration', async () => {
    const m = new OffHeapMap<string, unknown>();
    expect(m.get('a')).toBeUndefined();
    m.set('a', { id: 1, name: 'x' }).set('b', [1, 2, 3]).set('é😀', 'unicode');
    expect(m.size).toBe(3);
    expect(m.get('a')).toEqual({ id: 1, name: 'x' });
    expect(m.get('é😀')).toBe('unicode');
    expect(m.has('b')).toBe(true);
    m.set('a', { id: 2, name: 'a much longer name than before, so the record moves to a larger block' });
    expect(m.get('a')).toEqual({
      id: 2,
      name: 'a much longer name than before, so the record moves to a larger block',
    });
    expect(m.delete('b')).toBe(true);
    expect(m.delete('b')).toBe(false);
    expect(m.has('b')).toBe(false);
    expect(new Map(m.entries())).toEqual(
      new Map<string, unknown>([
        ['a', { id: 2, name: 'a much longer name than before, so the record moves to a larger block' }],
        ['é😀', 'unicode'],
      ]),
    );
    expect([...m.keys()].sort()).toEqual(['a', 'é😀']);
    await m.close();
    expect(() => m.set('c', 1)).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    expect(() => m.delete('a')).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    // reads too: the memory is the map's until close, not a snapshot that outlives it (README: use after close)
    const closed = expect.objectContaining({ code: OffHeapErrorCodes.CLOSED });
    expect(() => m.get('a')).toThrow(closed);
    expect(() => m.has('a')).toThrow(closed);
    expect(() => m.getBytes('a')).toThrow(closed);
    expect(() => m.size).toThrow(closed);
    expect(() => [...m.keys()]).toThrow(closed);
    expect(() => [...m.entries()]).toThrow(closed);
    expect(() => m.forEach(() => {})).toThrow(closed);
    await m.close(); // a second close is a no-op
  });

  it('reads -0 back as 0, as msgpack has no negative zero (README), and every other double as it was', () => {
    const m = new OffHeapMap<string, { x: number }>();
    for (const x of [-0, 0, -1.5, Number.MIN_VALUE, -Number.MAX_VALUE]) {
      m.set('k', { x });
      expect(Object.is(m.get('k')!.x, x === 0 ? 0 : x)).toBe(true);
    }
  });

  it('returns binary fields as copies that a later get does not overwrite', () => {
    const m = new OffHeapMap<string, { x: Uint8Array }>();
    m.set('a', { x: Uint8Array.of(1, 2) }).set('b', { x: Uint8Array.of(9, 9) });
    const a = m.get('a')!;
    m.get('b');
    expect(Array.from(a.x)).toEqual([1, 2]);
  });

  it('stores and returns raw bytes as they are', () => {
    const m = new OffHeapMap<Uint8Array, unknown>({ keys: 'bytes' });
    const k = Uint8Array.of(0, 255, 7);
    m.setBytes(k, Uint8Array.of(0x92, 1, 2));
    expect(Array.from(m.getBytes(Uint8Array.of(0, 255, 7))!)).toEqual([0x92, 1, 2]);
    expect(m.get(k)).toEqual([1, 2]);
    expect(m.get(Uint8Array.of(0, 255))).toBeUndefined();
    expect(() => m.get('x' as unknown as Uint8Array)).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it('answers getBytes, and the keys of a bytes map, with copies that later writes leave alone', () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    m.setBytes('a', Uint8Array.of(1, 2, 3));
    const got = m.getBytes('a')!;
    m.setBytes('a', Uint8Array.of(9, 9, 9)); // same size: overwritten in place
    expect(Array.from(got)).toEqual([1, 2, 3]);
    expect(got.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    const b = new OffHeapMap<Uint8Array, unknown>({ keys: 'bytes', threads: 1 });
    b.setBytes(Uint8Array.of(7, 7), Uint8Array.of(0xc0));
    const [key] = [...b.keys()];
    b.delete(Uint8Array.of(7, 7));
    b.setBytes(Uint8Array.of(5, 5), Uint8Array.of(0xc0)); // reuses the freed block
    expect(Array.from(key!)).toEqual([7, 7]);
  });

  it('decodes bytes another encoder made (inline record definitions) without disturbing its own structures', () => {
    const m = new OffHeapMap<string, unknown>();
    m.set('a', { id: 1, name: 'x' }).set('b', { other: true });
    const client = new Packr({ useRecords: true }); // no shared structures: records defined inline
    m.setBytes('c', client.pack({ q: 1, r: 2 }));
    expect(m.get('c')).toEqual({ q: 1, r: 2 });
    expect(m.get('a')).toEqual({ id: 1, name: 'x' });
    m.set('d', { id: 2, name: 'y' });
    expect([m.get('b'), m.get('d'), m.get('c')]).toEqual([{ other: true }, { id: 2, name: 'y' }, { q: 1, r: 2 }]);
    m.setBytes('bad', Uint8Array.of(0x92, 0x01)); // an array of two holding one element
    expect(() => m.get('bad')).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.DECODE_FAILED }));
  });

  it('clear, forEach, values and async dispose', async () => {
    const seen: [string, number][] = [];
    {
      await using m = new OffHeapMap<string, number>();
      for (let i = 0; i < 100; i++) m.set(`k${i}`, i);
      m.forEach((v, k) => {
        seen.push([k, v]);
      });
      expect([...m.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      m.clear();
      expect(m.size).toBe(0);
      expect(m.get('k1')).toBeUndefined();
      expect(m.stats().liveBytes).toBe(0);
    }
    expect(new Map(seen).get('k42')).toBe(42);
  });

  it('refuses oversized keys and values with typed errors, leaving the map unchanged', () => {
    const m = new OffHeapMap<string, unknown>();
    expect(() => m.set('k'.repeat(70_000), 1)).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.KEY_TOO_LARGE }),
    );
    expect(() => m.setBytes('v', new Uint8Array(1 << 24))).toThrow(
      expect.objectContaining({ code: OffHeapErrorCodes.VALUE_TOO_LARGE }),
    );
    expect(() => m.set('f', Symbol('x'))).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.ENCODE_FAILED }));
    expect(m.size).toBe(0);
    // the largest record that fits does fit
    m.setBytes('big', new Uint8Array((1 << 24) - 16 - 3));
    expect(m.getBytes('big')!.length).toBe((1 << 24) - 16 - 3);
  });

  it('grows incrementally: two tables during growth, every key reachable throughout', () => {
    const m = new OffHeapMap<string, number>();
    let sawGrowing = false;
    for (let i = 0; i < 20_000; i++) {
      m.set(`key:${i}`, i);
      if (m.stats().growing) {
        sawGrowing = true;
        // spot-check old and new keys while two tables are live
        expect(m.get('key:0')).toBe(0);
        expect(m.get(`key:${i >> 1}`)).toBe(i >> 1);
      }
    }
    expect(sawGrowing).toBe(true);
    for (let i = 0; i < 20_000; i++) expect(m.get(`key:${i}`)).toBe(i);
    const s = m.stats();
    expect(s.entries).toBe(20_000);
    expect(s.loadFactor).toBeLessThanOrEqual(0.75);
  });

  it('reclaims space under update-heavy load: arena used stays within 1.5x of live bytes', () => {
    const m = new OffHeapMap<string, unknown>();
    const rnd = fc.sample(fc.integer({ min: 0, max: 60 }), { numRuns: 200_000, seed: 42 });
    for (let i = 0; i < 2000; i++) m.set(`user:${i}`, { id: i, name: 'n'.repeat(rnd[i]!) });
    for (let r = 0; r < 100_000; r++) {
      const i = r % 2000;
      m.set(`user:${i}`, { id: i, name: 'n'.repeat(rnd[r + 2000]!) });
      if (r % 7 === 0) m.delete(`user:${(i * 7) % 2000}`);
    }
    const s = m.stats();
    expect(s.arenaUsedBytes).toBeLessThanOrEqual(1.5 * s.liveBytes + 64 * 1024);
    expect(s.liveBytes).toBeLessThanOrEqual(s.payloadBytes + 8 * s.entries);
  });

  it('matches a Map under random operations (model test, growth and deletes included)', () => {
    const key = fc.oneof(
      fc.integer({ min: 0, max: 300 }).map((i) => `k${i}`),
      fc.string({ maxLength: 6 }),
    );
    const value = fc.oneof(
      fc.integer(),
      fc.string({ maxLength: 40 }),
      fc.record({ id: fc.integer(), tags: fc.array(fc.string({ maxLength: 5 }), { maxLength: 4 }) }),
    );
    const op = fc.oneof(
      fc.record({ t: fc.constant('set' as const), k: key, v: value }),
      fc.record({ t: fc.constant('del' as const), k: key }),
      fc.record({ t: fc.constant('get' as const), k: key }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 600 }), (ops) => {
        const m = new OffHeapMap<string, unknown>();
        const model = new Map<string, unknown>();
        for (const o of ops) {
          if (o.t === 'set') {
            m.set(o.k, o.v);
            model.set(o.k, o.v);
          } else if (o.t === 'del') expect(m.delete(o.k)).toBe(model.delete(o.k));
          else expect(m.get(o.k)).toEqual(model.get(o.k));
          expect(m.size).toBe(model.size);
        }
        expect(new Map(m.entries())).toEqual(model);
        const s = m.stats();
        expect(s.liveBytes).toBeLessThanOrEqual(s.arenaUsedBytes);
      }),
      { numRuns: 150 },
    );
  });
});

describe('OffHeapMap after close()', () => {
  it("ends what was started before it too: the owner's views and running iterations throw CLOSED", async () => {
    const User = struct({ age: 'u8' });
    const m = new OffHeapMap<string, { age: number }, typeof User.fields>({ struct: User });
    m.set('a', { age: 30 }).set('b', { age: 40 });
    const view = m.view();
    expect(m.locate('a', view)).toBe(true);
    const keys = m.keys();
    expect(keys.next().done).toBe(false);
    const reader = OffHeapMapReader.attach<string, { age: number }, typeof User.fields>(m.share());
    const copy = reader.view();
    expect(reader.locate('b', copy)).toBe(true);
    await m.close();
    const closed = expect.objectContaining({ code: OffHeapErrorCodes.CLOSED });
    // The owner's view reads the map's memory itself, which is the map's until close.
    expect(() => view.age).toThrow(closed);
    expect(() => keys.next()).toThrow(closed);
    // A reader's view holds its own copy of the record, like a value from get(): it keeps reading that copy; the
    // reader's next read of the map throws.
    expect(copy.age).toBe(40);
    expect(() => reader.locate('a', copy)).toThrow(closed);
    reader.close();
  });
});

describe('OffHeapMap.durable() in a loop', () => {
  /** Awaits `step()` until a timer set before the loop has fired, at most `limit` times; how many it took. */
  async function loopUntilTimer(step: () => Promise<void>, limit: number): Promise<number | undefined> {
    let fired = false;
    const timer = setTimeout(() => {
      fired = true;
    }, 0);
    for (let n = 1; n <= limit; n++) {
      await step();
      if (fired) return n;
    }
    clearTimeout(timer);
    return undefined;
  }

  it('lets timers run while a loop awaits it, memory-only and persisted, writing or not', async () => {
    // Each durable() below finds its writes already handed to the OS (or has none): without a yield the loop never
    // leaves the microtask queue, and the timer fires only after the whole loop.
    const memory = new OffHeapMap<string, number>();
    expect(await loopUntilTimer(() => memory.durable(), 200_000)).toBeDefined();
    await memory.close();
    const dir = mkdtempSync(join(tmpdir(), 'offheap-durable-'));
    try {
      const map = await OffHeapMap.open<string, number>({ dir });
      expect(await loopUntilTimer(() => map.durable(), 200_000)).toBeDefined();
      let i = 0;
      expect(await loopUntilTimer(() => map.set(`k${i}`, i++).durable(), 200_000)).toBeDefined();
      await map.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
