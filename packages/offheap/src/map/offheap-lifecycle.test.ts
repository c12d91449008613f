import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapErrorCodes, OffHeapMap, OffHeapMapReader } from '../index.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-life-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Resource kinds that close() must not leave behind (timers, workers, ports, file handles). */
function liveResources(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((r) => r !== 'TTYWrap' && r !== 'PipeWrap' && r !== 'ProcessWrap' && r !== 'TCPWrap')
    .sort();
}

describe('OffHeapMap lifecycle', () => {
  it('close() leaves no worker, port, timer or file handle behind, and is idempotent', async () => {
    const before = liveResources();
    const map = await OffHeapMap.open<string, { n: number }>({ dir: join(root, 'a'), threads: 2 });
    for (let i = 0; i < 5000; i++) map.set(`k${i}`, { n: i });
    const mod = `data:text/javascript,${encodeURIComponent('export default (c) => { let n = 0; while (c.next()) n++; return n; }')}`;
    expect((await map.scan<number>({ module: mod })).reduce((a, b) => a + b, 0)).toBe(5000);
    expect(await map.getMany(['k1', 'k2'])).toEqual([{ n: 1 }, { n: 2 }]);
    const reader = OffHeapMapReader.attach<string, { n: number }>(map.share());
    expect(reader.get('k3')).toEqual({ n: 3 });
    await map.close();
    await map.close();
    reader.close();
    await new Promise((r) => setImmediate(r));
    // Nothing of ours is left: no kind of resource is more numerous than before the map existed.
    const count = (list: string[]) => list.reduce((m, r) => m.set(r, (m.get(r) ?? 0) + 1), new Map<string, number>());
    const was = count(before);
    const leaked = [...count(liveResources())].filter(([kind, n]) => n > (was.get(kind) ?? 0));
    expect(leaked).toEqual([]);
    // reads end with close too, as the README's errors table says: a closed map answers nothing, not a stale state
    expect(() => map.get('k1')).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    expect(() => map.set('k1', { n: 0 })).toThrow(expect.objectContaining({ code: OffHeapErrorCodes.CLOSED }));
    await expect(map.scan({ module: mod })).rejects.toMatchObject({ code: OffHeapErrorCodes.CLOSED });
  });

  it('a second open of the same directory fails with the engine lock, and the first keeps working', async () => {
    const dir = join(root, 'b');
    const map = await OffHeapMap.open({ dir });
    await expect(OffHeapMap.open({ dir })).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
    map.set('x', 1);
    expect(map.get('x')).toBe(1);
    await map.close();
  });
});
