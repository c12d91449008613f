/**
 * (b) what a service does without heapless: rebuild a plain `Map<string, object>` from the same local engine
 * directory (`Engine.open`, one iterator over the map's data range with `nextv`, each value decoded with the map's
 * persisted msgpackr structures), then the first `get` from the `Map`. The layout read here is the one of
 * packages/offheap/FORMAT.md §7: key `0x00 "structures"`, records under `0x01` + key.
 */
import { Engine } from '@heapless/engine';
import { Packr, unpack } from 'msgpackr';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey } from '../listing.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

/** Entries per `nextv` (the plain-Map rebuild reads entries one copy each, as a user of the public iterator would). */
const BATCH = 8192;
/** OffHeapMap's default number of shared structures (ids 0x40..0x5f). */
const MAX_SHARED_STRUCTURES = 32;
const NS_META = 0x00;
const NS_DATA = 0x01;

export async function probeMapRebuild(dir: string, records: number): Promise<Sample[]> {
  const probe = records >> 1;
  const started = performance.now();
  const engine = await Engine.open(dir, { createIfMissing: false });
  try {
    const structuresBytes = engine.getSync(Uint8Array.of(NS_META, ...new TextEncoder().encode('structures')));
    const structures = structuresBytes === undefined ? [] : (unpack(structuresBytes) as string[][]);
    const packr = new Packr({ useRecords: true, structures, maxSharedStructures: MAX_SHARED_STRUCTURES });
    const decoder = new TextDecoder();
    const map = new Map<string, unknown>();
    const it = engine.iterator({ gte: Uint8Array.of(NS_DATA), lt: Uint8Array.of(NS_DATA + 1) });
    try {
      for (;;) {
        const entries = await it.nextv(BATCH);
        if (entries.length === 0) break;
        for (const [key, value] of entries) {
          map.set(decoder.decode((key as Uint8Array).subarray(1)), packr.unpack(value as Uint8Array));
        }
      }
    } finally {
      await it.close();
    }
    const value = map.get(listingKey(probe));
    const ms = performance.now() - started;
    checkListing(probe, value);
    if (map.size !== records) throw new Error(`the Map holds ${map.size} records, expected ${records}`);
    return [timeSample(START_CASE, ms), ...memorySamples()];
  } finally {
    await engine.close();
  }
}
