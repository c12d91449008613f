import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { OffHeapMap } from '../map/offheap-map.js';
import { struct, utf8 } from '../struct.js';
import type { ScanCursor } from './record-cursor.js';

const Person = struct({ age: 'u8', name: utf8(12) });
type PersonValue = ReturnType<typeof Person.decode>;
type Cursor = ScanCursor<string, PersonValue, typeof Person.fields>;

function person(i: number): PersonValue {
  return { age: 1 + (i % 200), name: `p${i}` };
}

/** A struct map of `n` people; every 97th key is long enough to make the cursor grow its buffer. */
function people(n: number): OffHeapMap<string, PersonValue, typeof Person.fields> {
  const map = new OffHeapMap<string, PersonValue, typeof Person.fields>({ struct: Person });
  for (let i = 0; i < n; i++) map.set(i % 97 === 0 ? `${'k'.repeat(5000 + i)}${i}` : `k${i}`, person(i));
  return map;
}

describe('RecordCursor', () => {
  it('a view fetched before the first next() reads each record next() moves to, across buffer growth', async () => {
    const n = 3000;
    const map = people(n);
    const [seen] = map.scanSync((c: Cursor) => {
      const view = c.view; // once, before the loop, as a scan function naturally does
      const out: string[] = [];
      while (c.next()) out.push(`${view.name}:${view.age}:${c.value.age}`);
      return out;
    });
    const want = Array.from({ length: n }, (_, i) => `p${i}:${person(i).age}:${person(i).age}`);
    expect(seen!.sort()).toEqual(want.sort());
    await map.close();
  });

  it('the view throws VIEW_NOT_POSITIONED before the first record and after the last, and refuses writes', async () => {
    const map = people(3);
    map.scanSync((c: Cursor) => {
      const view = c.view;
      const notPositioned = expect.objectContaining({ code: OffHeapErrorCodes.VIEW_NOT_POSITIONED });
      expect(() => view.age).toThrow(notPositioned);
      expect(view.positioned).toBe(false);
      expect(c.next()).toBe(true);
      expect(view.positioned).toBe(true);
      expect(c.view).toBe(view);
      expect(() => {
        (view as { age: number }).age = 9;
      }).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.READ_ONLY }));
      while (c.next());
      expect(() => view.age).toThrow(notPositioned);
    });
    await map.close();
  });

  it('keys of a bytes map stay each its own after next(), in scanSync, scan and filter', async () => {
    const map = new OffHeapMap<Uint8Array, { n: number }>({ keys: 'bytes', threads: 2 });
    const want: string[] = [];
    for (let i = 0; i < 50; i++) {
      map.set(Uint8Array.of(i, 255 - i), { n: i });
      want.push(`${i},${255 - i}`);
    }
    const text = (keys: Uint8Array[]) => keys.map((k) => Array.from(k).join(',')).sort();
    const collect = (c: ScanCursor<Uint8Array, { n: number }>) => {
      const keys: Uint8Array[] = [];
      while (c.next()) keys.push(c.key);
      return keys;
    };
    want.sort();
    expect(text(map.scanSync(collect).flat())).toEqual(want);
    const module = `data:text/javascript,${encodeURIComponent(
      `export default ${collect.toString()}; export const even = (v) => v.n % 2 === 0;`,
    )}`;
    expect(text((await map.scan<Uint8Array[]>({ module })).flat())).toEqual(want);
    const even = await map.filter({ module, name: 'even' });
    expect(even.map(([k, v]) => `${Array.from(k).join(',')}=${v.n}`).sort()).toEqual(
      want.filter((k) => Number(k.split(',')[0]) % 2 === 0).map((k) => `${k}=${k.split(',')[0]}`),
    );
    await map.close();
  });
});
