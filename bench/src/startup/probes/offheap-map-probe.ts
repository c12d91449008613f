/**
 * (a) heapless: `OffHeapMap.open({ dir })`, then the first `get`, decoded. With `image` (system `offheap-map`) the
 * open maps the map image the fixture's close wrote (and fails the run if it scanned instead, so a rejected image
 * cannot pass for a fast start); without (`offheap-scan`) it rebuilds index and arena by one scan of the engine.
 */
import { OffHeapMap } from '@heapless/offheap';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey } from '../listing.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

export async function probeOffHeapMap(dir: string, records: number, image: boolean): Promise<Sample[]> {
  const probe = records >> 1;
  const started = performance.now();
  const map = await OffHeapMap.open<string, unknown>({ dir, image });
  try {
    const value = map.get(listingKey(probe));
    const ms = performance.now() - started;
    checkListing(probe, value);
    const { loadedFrom, imageRejected } = map.stats();
    if (loadedFrom !== (image ? 'image' : 'scan')) throw new Error(`loaded by ${loadedFrom} (${imageRejected})`);
    if (map.size !== records) throw new Error(`the map holds ${map.size} records, expected ${records}`);
    return [timeSample(START_CASE, ms), ...memorySamples()];
  } finally {
    await map.close();
  }
}
