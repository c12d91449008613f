/**
 * (a) heapless: `OffHeapMap.open({ dir })` (engine open, WAL replay, the index and arena rebuilt by one sequential
 * scan), then the first `get`, decoded.
 */
import { OffHeapMap } from '@heapless/offheap';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey } from '../listing.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

export async function probeOffHeapMap(dir: string, records: number): Promise<Sample[]> {
  const probe = records >> 1;
  const started = performance.now();
  const map = await OffHeapMap.open<string, unknown>({ dir });
  try {
    const value = map.get(listingKey(probe));
    const ms = performance.now() - started;
    checkListing(probe, value);
    if (map.size !== records) throw new Error(`the map holds ${map.size} records, expected ${records}`);
    return [timeSample(START_CASE, ms), ...memorySamples()];
  } finally {
    await map.close();
  }
}
