/**
 * (c) lmdb: opening the store is mapping a file, so "open + first get" is nearly free and the records are read
 * later, on demand. For fairness it also reports a full read of every record, decoded (`getRange`), which is what
 * a warm service must pay somewhere.
 */
import { open } from 'lmdb';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey } from '../listing.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

/** The case of the full read. */
export const FULL_READ_CASE = 'full read (getRange, decoded)';

export async function probeLmdb(dir: string, records: number): Promise<Sample[]> {
  const probe = records >> 1;
  const started = performance.now();
  const db = open<unknown, string>({ path: dir, sharedStructuresKey: Symbol.for('structures'), readOnly: true });
  try {
    const value = db.get(listingKey(probe));
    const ms = performance.now() - started;
    checkListing(probe, value);
    const readStarted = performance.now();
    let count = 0;
    for (const { value: listing } of db.getRange()) if (listing !== undefined) count++;
    const readMs = performance.now() - readStarted;
    if (count !== records) throw new Error(`lmdb holds ${count} records, expected ${records}`);
    return [timeSample(START_CASE, ms), timeSample(FULL_READ_CASE, readMs), ...memorySamples()];
  } finally {
    await db.close();
  }
}
