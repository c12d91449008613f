/**
 * The writer the `offheap-crash` system kills: `node crash-writer.js <dir> <records>`, forked by the startup
 * workload on the fixture the clean close left. It opens the map (from its image), rewrites 1% of the listings,
 * writes a map image as the running map does periodically, rewrites another 1%, waits until they are in the WAL,
 * says so over IPC and waits to be killed with SIGKILL: what is on disk then is what a crash leaves — the image of
 * a running map and the WAL after it.
 */
import process from 'node:process';
import { OffHeapMap } from '@heapless/offheap';
import { listingKey, listingOf } from './listing.js';

/** Share of the records rewritten before, and again after, the image. */
const CRASH_SHARE = 0.01;

async function main([dir, recordsText]: string[]): Promise<void> {
  const records = Number(recordsText);
  const map = await OffHeapMap.open<string, unknown>({ dir, imageEvery: false });
  const n = Math.max(1000, Math.floor(records * CRASH_SHARE));
  const rewrite = async (from: number) => {
    for (let j = from; j < from + n; j++) {
      // A stride through the keys: the rewrites touch the whole arena, not one end of it.
      const i = (j * 7919) % records;
      map.set(listingKey(i), listingOf(i));
      if (j % 10_000 === 9_999) await map.durable();
    }
    await map.durable();
  };
  await rewrite(0);
  if (!(await map.writeImage())) throw new Error('the map image was not written');
  await rewrite(n);
  process.send!({ kind: 'ready', image: map.imageStats() });
  setInterval(() => {}, 60_000); // killed here (a pending promise alone would let the process exit)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.send!({ kind: 'failed', message: String(error instanceof Error ? error.stack : error) });
  process.exit(1);
});
