import { describe, expect, it } from 'vitest';
import { OffHeapErrorCodes } from '../errors.js';
import { OffHeapMap } from '../map/offheap-map.js';
import { struct } from '../struct.js';
import { OffHeapMapReader } from './offheap-reader.js';

describe('OffHeapMapReader', () => {
  it('keeps the view protocol off its API; its views still refuse writes and need locate', async () => {
    const Point = struct({ x: 'u32' });
    const m = new OffHeapMap<string, { x: number }, typeof Point.fields>({ struct: Point });
    m.set('a', { x: 7 });
    const reader = OffHeapMapReader.attach<string, { x: number }, typeof Point.fields>(m.share());
    for (const member of ['reclaims', 'revalidate', 'beginWrite', 'endWrite']) expect(member in reader).toBe(false);
    const view = reader.view();
    expect(() => view.x).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.VIEW_NOT_POSITIONED }));
    expect(reader.locate('a', view)).toBe(true);
    expect(view.x).toBe(7);
    expect(() => {
      (view as { x: number }).x = 8;
    }).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.READ_ONLY }));
    expect(m.get('a')).toEqual({ x: 7 });
    reader.close();
    await m.close();
  });
});
