/**
 * The data each system starts from, written in the run's own directory before the timed probe starts: N listings
 * persisted through `OffHeapMap.open({ dir })` (an engine directory, which the OffHeapMap, the Map rebuild and the
 * fs floor all read), or the same listings in an lmdb store (msgpack with shared structures, lmdb-js's default
 * encoding). Both are closed before the probe process opens them; what they wrote is still in the page cache.
 */
import type { RunContext } from '../harness/benchmark.js';
import { fillOffHeapMap } from '../offheap-fixture.js';
import { listingKey, listingOf } from './listing.js';

/** Writes per lmdb transaction, so that it does not buffer the whole load in one event-loop turn. */
const STEP = 10_000;

/** Persists N listings through OffHeapMap into `dir` and closes it (which writes the map image). */
export async function writeEngineFixture(ctx: RunContext, dir: string): Promise<void> {
  await fillOffHeapMap(ctx, dir, 'write engine fixture', (map, i) => map.set(listingKey(i), listingOf(i)));
}

/** Writes N listings into an lmdb store in `dir`, one transaction per 10,000, and closes it. */
export async function writeLmdbFixture(ctx: RunContext, dir: string): Promise<void> {
  const { open } = await import('lmdb');
  const db = open<unknown, string>({ path: dir, sharedStructuresKey: Symbol.for('structures'), noSync: true });
  try {
    const ticker = ctx.progress('write lmdb fixture', ctx.records);
    for (let first = 0; first < ctx.records; first += STEP) {
      const end = Math.min(ctx.records, first + STEP);
      db.transactionSync(() => {
        for (let i = first; i < end; i++) db.putSync(listingKey(i), listingOf(i));
      });
      ticker.update(end);
    }
    ticker.finish();
  } finally {
    await db.close();
  }
}
