/**
 * Quick measurement, not a test: `set` with a TTL against a plain `set`, a checked `set` (`ifVersion`) and `incr`, on
 * one memory-only and one persisted OffHeapMap, same keys and values, same run, as ops/s and ratios to the plain set.
 *
 *   npx tsc -p packages/offheap/tsconfig.bench.json && node packages/offheap/dist/bench/map/offheap-ttl.bench.js [N]
 *
 * Rounds alternate the cases, twice, and the second round is reported (the first warms the code up).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffHeapMap } from './offheap-map.js';

const N = Number(process.argv[2] ?? 500_000);
const keys: string[] = [];
for (let i = 0; i < N; i++) keys.push(`session:${i}`);
const value = { user: 12345, role: 'reader', seen: 1_700_000_000 };

function opsPerSec(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return N / ((performance.now() - t0) / 1000);
}

async function measure(open: () => Promise<OffHeapMap<string, unknown>>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let round = 0; round < 2; round++) {
    let map = await open();
    out.set(
      'set',
      opsPerSec(() => {
        for (let i = 0; i < N; i++) map.set(keys[i]!, value);
      }),
    );
    await map.close();
    map = await open();
    out.set(
      'set { ttl }',
      opsPerSec(() => {
        for (let i = 0; i < N; i++) map.set(keys[i]!, value, { ttl: 60_000 });
      }),
    );
    out.set(
      'set { ifVersion }',
      opsPerSec(() => {
        for (let i = 0; i < N; i++) {
          const k = keys[i]!;
          map.set(k, value, { ifVersion: map.getEntry(k)!.version });
        }
      }),
    );
    out.set(
      'incr',
      opsPerSec(() => {
        for (let i = 0; i < N; i++) map.incr(keys[i % 1024]!.concat(':n'));
      }),
    );
    await map.close();
  }
  return out;
}

const root = mkdtempSync(join(tmpdir(), 'offheap-ttl-bench-'));
try {
  let dirs = 0;
  const systems: [string, () => Promise<OffHeapMap<string, unknown>>][] = [
    ['memory', async () => new OffHeapMap<string, unknown>({ threads: 1 })],
    ['persisted', () => OffHeapMap.open<string, unknown>({ dir: join(root, `d${dirs++}`), threads: 1, image: false })],
  ];
  console.log(`N = ${N}`);
  console.log('system     case                 ops/s   ratio to set');
  for (const [name, open] of systems) {
    const r = await measure(open);
    const base = r.get('set')!;
    for (const [c, ops] of r) {
      console.log(
        `${name.padEnd(10)} ${c.padEnd(18)} ${Math.round(ops).toString().padStart(9)}   ${(ops / base).toFixed(2)}`,
      );
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
