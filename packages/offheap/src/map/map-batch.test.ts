import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { struct } from '../struct.js';
import { MAX_META_VALUE_BYTES } from './map-meta.js';
import { MAX_KEY_BYTES } from './map-options.js';
import { OffHeapMap } from './offheap-map.js';

const root = mkdtempSync(join(tmpdir(), 'map-batch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);
const bytes = (...b: number[]) => Uint8Array.from(b);
const code = (c: string) => expect.objectContaining({ code: c });

describe('map.batch() on a memory-only map', () => {
  it('applies sets, deletes and metadata in order, a later operation on a key winning', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    m.set('gone', 1).set('kept', 2);
    const b = m.batch().set('a', { v: 1 }).set('a', { v: 2 }).delete('gone').set('b', 'x').delete('b');
    b.setMeta('offset', bytes(7)).setMeta('schema', bytes(1, 2)).deleteMeta('schema');
    expect(b.length).toBe(8);
    expect(m.has('a')).toBe(false); // nothing applied before write
    const result = await b.write();
    expect(result.sequence).toBeUndefined();
    expect(b.length).toBe(0); // emptied for reuse
    expect(new Map(m.entries())).toEqual(
      new Map<string, unknown>([
        ['a', { v: 2 }],
        ['kept', 2],
      ]),
    );
    expect(m.meta.get('offset')).toEqual(bytes(7));
    expect(m.meta.has('schema')).toBe(false);
    expect(m.meta.names()).toEqual(['offset']);
    await m.close();
  });

  it('keeps metadata out of the key space: no key, size, iteration or range sees it, and clear() leaves it', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    await m.batch().set('offset', 'a record named like the metadata').setMeta('offset', bytes(1)).write();
    expect(m.size).toBe(1);
    expect(m.get('offset')).toBe('a record named like the metadata');
    expect(m.range().entries.map(([k]) => k)).toEqual(['offset']);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.meta.get('offset')).toEqual(bytes(1));
    await m.close();
  });

  it('refuses a bad operation as it is added, leaving the batch as it was', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    const b = m.batch().set('ok', 1);
    expect(() => b.set(5 as unknown as string, 1)).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(() => b.set('\ud800', 1)).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(() => b.delete('k'.repeat(MAX_KEY_BYTES + 1))).toThrow(code(OffHeapErrorCodes.KEY_TOO_LARGE));
    expect(() => b.set('f', Symbol('x'))).toThrow(code(OffHeapErrorCodes.ENCODE_FAILED));
    expect(() => b.setBytes('x', 'not bytes' as unknown as Uint8Array)).toThrow(
      code(OffHeapErrorCodes.INVALID_ARGUMENT),
    );
    expect(() => b.setMeta('', bytes(1))).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(() => b.setMeta('\udc00', bytes(1))).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(() => b.setMeta('n'.repeat(256), bytes(1))).toThrow(code(OffHeapErrorCodes.KEY_TOO_LARGE));
    expect(() => b.setMeta('n', [1] as unknown as Uint8Array)).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(() => b.setMeta('n', new Uint8Array(MAX_META_VALUE_BYTES + 1))).toThrow(
      code(OffHeapErrorCodes.VALUE_TOO_LARGE),
    );
    expect(() => m.meta.get(7 as unknown as string)).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    expect(b.length).toBe(1);
    await b.write();
    expect([...m.keys()]).toEqual(['ok']);
    await m.close();
  });

  it('copies what it is given: changing a value or byte key after adding it changes nothing', async () => {
    const m = new OffHeapMap<Uint8Array, unknown>({ keys: 'bytes', threads: 1 });
    const key = bytes(1, 2);
    const value = bytes(0x92, 1, 2);
    const name = bytes(9);
    const b = m.batch().setBytes(key, value);
    b.setMeta('n', name);
    key[0] = 7;
    value[1] = 5;
    name[0] = 0;
    await b.write();
    expect(Array.from(m.getBytes(bytes(1, 2))!)).toEqual([0x92, 1, 2]);
    expect(m.has(bytes(7, 2))).toBe(false);
    expect(m.meta.get('n')).toEqual(bytes(9));
    await m.close();
  });

  it('rejects a write after close with CLOSED, and meta reads throw it', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    const b = m.batch().set('a', 1);
    await m.close();
    await expect(b.write()).rejects.toMatchObject({ code: OffHeapErrorCodes.CLOSED });
    expect(() => m.meta.get('a')).toThrow(code(OffHeapErrorCodes.CLOSED));
  });
});

describe('map.batch() on a persisted map', () => {
  it('survives a reopen by scan and by image; metadata never becomes a key', async () => {
    for (const image of [false, true]) {
      const dir = freshDir();
      const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image });
      m.set('old', 0);
      const first = await m.batch().set('a', { n: 1 }).delete('old').setMeta('offset', bytes(1)).write();
      const second = await m.meta.set('schema', bytes(0xab), { sync: true });
      expect(first.sequence).toBeGreaterThan(0);
      expect(second.sequence).toBeGreaterThan(first.sequence!);
      await m.close();
      const again = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image });
      expect(again.stats().loadedFrom).toBe(image ? 'image' : 'scan');
      expect(new Map(again.entries())).toEqual(new Map([['a', { n: 1 }]]));
      expect(again.range().entries.map(([k]) => k)).toEqual(['a']);
      expect(again.meta.names()).toEqual(['offset', 'schema']);
      expect(again.meta.get('schema')).toEqual(bytes(0xab));
      await again.meta.delete('offset');
      expect(again.meta.names()).toEqual(['schema']);
      await again.close();
    }
  });

  it('gives struct maps metadata too', async () => {
    const dir = freshDir();
    const Point = struct({ x: 'i32', y: 'i32' });
    const m = await OffHeapMap.open({ dir, struct: Point, threads: 1 });
    await m.batch().set('p', { x: 1, y: -2 }).setMeta('position', bytes(4, 2)).write();
    expect(() => m.batch().setBytes('q', bytes(1))).toThrow(code(OffHeapErrorCodes.INVALID_ARGUMENT));
    await m.close();
    const again = await OffHeapMap.open({ dir, struct: Point, threads: 1 });
    expect(again.get('p')).toEqual({ x: 1, y: -2 });
    expect(again.meta.get('position')).toEqual(bytes(4, 2));
    await again.close();
  });

  it('persists a structure first used inside a batch with the batch (a reopen decodes its values)', async () => {
    const dir = freshDir();
    const m = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image: false });
    const b = m.batch();
    for (let i = 0; i < 40; i++) b.set(`k${i}`, { [`field${i}`]: i, shared: true });
    await b.write();
    await m.close();
    const again = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image: false });
    for (let i = 0; i < 40; i++) expect(again.get(`k${i}`)).toEqual({ [`field${i}`]: i, shared: true });
    await again.close();
  });

  it('matches a plain Map and a Map of metadata over random batches, across reopens', async () => {
    const key = fc.constantFrom('a', 'b', 'c', 'é', 'long-key-'.repeat(8), '😀');
    const name = fc.constantFrom('offset', 'schema', 'ω');
    const op = fc.oneof(
      fc.record({ t: fc.constant('set' as const), k: key, v: fc.oneof(fc.integer(), fc.string({ maxLength: 300 })) }),
      fc.record({ t: fc.constant('delete' as const), k: key }),
      fc.record({ t: fc.constant('meta' as const), k: name, v: fc.uint8Array({ maxLength: 40 }) }),
      fc.record({ t: fc.constant('unmeta' as const), k: name }),
    );
    const step = fc.record({ ops: fc.array(op, { maxLength: 12 }), reopen: fc.boolean(), sync: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        const dir = freshDir();
        const model = new Map<string, unknown>();
        const meta = new Map<string, Uint8Array>();
        let m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
        let last = 0;
        try {
          for (const s of steps) {
            const b = m.batch();
            for (const o of s.ops) {
              if (o.t === 'set') {
                b.set(o.k, o.v);
                model.set(o.k, o.v);
              } else if (o.t === 'delete') {
                b.delete(o.k);
                model.delete(o.k);
              } else if (o.t === 'meta') {
                b.setMeta(o.k, o.v);
                meta.set(o.k, o.v);
              } else {
                b.deleteMeta(o.k);
                meta.delete(o.k);
              }
            }
            const { sequence } = await b.write({ sync: s.sync });
            expect(sequence).toBeGreaterThanOrEqual(last);
            last = sequence!;
            if (s.reopen) {
              await m.close();
              m = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
            }
            expect(new Map(m.entries())).toEqual(model);
            expect(m.size).toBe(model.size);
            expect(m.range({ limit: 1000 }).entries.length).toBe(model.size);
            expect(new Map(m.meta.names().map((n) => [n, m.meta.get(n)!]))).toEqual(meta);
          }
        } finally {
          await m.close();
        }
      }),
      { numRuns: 25 },
    );
    // Up to 200 opens and fsyncs: about 20 s alone on 2 cores, past the default 60 s when the machine is shared.
  }, 180_000);
});
