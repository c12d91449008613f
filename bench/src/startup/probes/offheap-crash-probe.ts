/**
 * (b) heapless after a crash (`offheap-crash`): `OffHeapMap.open({ dir })` on what the killed crash writer left —
 * the image it wrote while running and the WAL after it — then the first `get`. The open returns before the WAL's
 * writes are in the map's memory (each key's go in before it is read, the rest in the background), so a second row
 * gives the time until the background has put in the last of them. Fails the run if the open scanned or replayed
 * nothing, so a rebuild cannot pass for a fast restart.
 */
import { OffHeapMap } from '@heapless/offheap';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey } from '../listing.js';
import { REPLAYED_CASE, START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

export async function probeOffHeapCrash(dir: string, records: number): Promise<Sample[]> {
  const probe = records >> 1;
  const started = performance.now();
  const map = await OffHeapMap.open<string, unknown>({ dir });
  try {
    const value = map.get(listingKey(probe));
    const ms = performance.now() - started;
    while (map.openStats.replayPending > 0) await new Promise((r) => setImmediate(r));
    const foldedMs = performance.now() - started;
    checkListing(probe, value);
    const { source, replayed, imageRejected } = map.openStats;
    if (source !== 'image' || replayed === 0)
      throw new Error(`opened by ${source}, ${replayed} replayed (${imageRejected})`);
    if (map.size !== records) throw new Error(`the map holds ${map.size} records, expected ${records}`);
    const replay: Sample = {
      case: 'WAL writes replayed',
      metric: 'count',
      value: replayed,
      unit: 'writes',
      better: 'lower',
    };
    return [timeSample(START_CASE, ms), timeSample(REPLAYED_CASE, foldedMs), replay, ...memorySamples()];
  } finally {
    await map.close();
  }
}
