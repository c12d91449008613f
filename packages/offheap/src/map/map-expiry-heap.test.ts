import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const DIST = new URL('../../dist/index.js', import.meta.url).href;

/**
 * 1M keys with a TTL in a map: what the JS heap holds after a full GC moves by a few MiB at most, since the expiry
 * index is a typed array (off the heap) and no key has a JS object of its own. Run in a child with --expose-gc, so
 * that what is measured is what stays live, not garbage a collection has not reached yet.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
const map = new OffHeapMap({ threads: 1, capacity: 1_000_000 });
map.set('warm', 1, { ttl: 60_000 });
map.expireNow();
globalThis.gc(); globalThis.gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < 1_000_000; i++) map.set('key:' + i, i, { ttl: 60_000 + (i % 1000) });
globalThis.gc(); globalThis.gc();
const after = process.memoryUsage().heapUsed;
const s = map.stats();
console.log(JSON.stringify({ before, after, expiring: s.expiring, expiryIndexBytes: s.expiryIndexBytes }));
await map.close();
`;

describe('the heap with 1M keys that expire', () => {
  it('grows by a few MiB at most: the expiry index is off the heap', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.stderr).toBe('');
    const m = JSON.parse(r.stdout) as { before: number; after: number; expiring: number; expiryIndexBytes: number };
    expect(m.expiring).toBe(1_000_001);
    expect(m.expiryIndexBytes).toBeGreaterThanOrEqual(16_000_000);
    expect(m.after - m.before).toBeLessThan(4 * 1024 * 1024);
  }, 150_000);
});
