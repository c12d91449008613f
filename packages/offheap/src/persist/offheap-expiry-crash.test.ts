import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../index.js';
import { runUntilKilled } from '../test-support/kill-child.js';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'offheap-expiry-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * The child resumes from its counter `ctr` and, in a loop: writes short-lived keys (`t:<n>`, 5..80 ms, which its
 * active expiry keeps removing, as engine deletes) and long-lived ones (`l:<n>`, one hour); then a checked batch that
 * moves `ctr` from n to n + 1 (checked against the version it read) with a record `rec:<n>`, acknowledged once
 * fsynced (`ack n`); and a batch whose check is stale (it must fail, and writes `bad:<n>`: never to be seen), printing
 * `fail n`. It also writes images now and then, so that a reopen may come from an image and its WAL suffix.
 */
const CHILD = `
import { OffHeapMap } from ${JSON.stringify(DIST)};
const [dir] = process.argv.slice(2);
const map = await OffHeapMap.open({ dir, threads: 1, imageEvery: { bytes: 256 * 1024 } });
for (;;) {
  const e = map.getEntry('ctr');
  const n = e === undefined ? 0 : e.value;
  for (let i = 0; i < 20; i++) map.set('t:' + n + ':' + i, { n, pad: 'x'.repeat(i * 20) }, { ttl: 5 + ((n * 7 + i * 13) % 75) });
  map.set('l:' + n, n, { ttl: 3_600_000 });
  const b = map.batch();
  if (e === undefined) b.check({ key: 'ctr', absent: true }); else b.check({ key: 'ctr', version: e.version });
  b.set('ctr', n + 1).set('rec:' + n, n);
  await b.write({ sync: true });
  process.stdout.write('ack ' + n + '\\n');
  const stale = map.batch().check({ key: 'ctr', version: e === undefined ? 1 : e.version }).set('bad:' + n, n);
  try { await stale.write(); process.stdout.write('passed-stale ' + n + '\\n'); }
  catch (err) { if (err.code !== 'HEAPLESS_ERR_OFFHEAP_VERSION_MISMATCH') throw err; }
  if (n % 10 === 0) await new Promise((r) => setTimeout(r, 3 + (n % 7)));
}
`;
const childFile = join(root, 'child.mjs');
writeFileSync(childFile, CHILD);

describe('an OffHeapMap with TTLs and checked batches, killed with SIGKILL while it expires keys', () => {
  it('reopens with every acknowledged checked write, no failed one, and no expired key readable', async () => {
    const dir = join(root, 'd');
    let previous = 0;
    for (let cycle = 0; cycle < 6; cycle++) {
      let acked = -1;
      let seen = 0;
      const lines = 20 + Math.floor(Math.random() * 80);
      await runUntilKilled(childFile, [dir], (line) => {
        expect(line.startsWith('passed-stale')).toBe(false);
        acked = Number(line.split(' ')[1]);
        return ++seen === lines;
      });
      const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1, image: cycle % 2 === 0 });
      try {
        const ctr = map.get('ctr') as number;
        // Every acknowledged check-passed batch is there, and nothing is lost across cycles.
        expect(ctr).toBeGreaterThan(acked);
        expect(ctr).toBeGreaterThanOrEqual(previous);
        previous = ctr;
        for (let n = 0; n < ctr; n++) {
          expect(map.get(`rec:${n}`)).toBe(n);
          expect(map.has(`bad:${n}`)).toBe(false);
        }
        // The long-lived keys of every acknowledged step kept their expiry; no key readable is past its own.
        for (let n = 0; n <= acked; n++) expect(map.ttl(`l:${n}`)).toBeGreaterThan(0);
        const now = Date.now();
        for (const k of map.keys()) {
          const e = map.getEntry(k);
          if (e !== undefined && e.expiresAt !== 0) expect(e.expiresAt).toBeGreaterThan(now - 1);
        }
        // The short-lived ones are all gone by now, to reads and, once reaped, from the index.
        await new Promise((r) => setTimeout(r, 100));
        map.expireNow();
        expect([...map.keys()].filter((k) => k.startsWith('t:'))).toEqual([]);
        expect(map.size).toBe(1 + 2 * ctr);
      } finally {
        await map.close();
      }
    }
  }, 240_000);
});
