/**
 * (c) heapless live checkpoint (`offheap-checkpoint`): the map opened from its image keeps a writer busy (one
 * listing rewritten per event-loop turn) while `map.checkpoint(dir)` copies it; reported are the checkpoint's time,
 * the longest pause of the writer while it ran and, for scale, in as long a window before it; then the copy's
 * open + first get (from its image plus the WAL after it, never a scan), which is the row the ratios compare.
 */
import { dirname, join } from 'node:path';
import { OffHeapMap } from '@heapless/offheap';
import type { Sample } from '../../harness/benchmark.js';
import { checkListing, listingKey, listingOf } from '../listing.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

/** Runs a writer of one set per turn; `gap()` is the longest time between two of its writes since the last call. */
function busyWriter(map: OffHeapMap<string, unknown>, records: number) {
  let stop = false;
  let longest = 0;
  let last = performance.now();
  const done = (async () => {
    for (let j = 0; !stop; j++) {
      const i = (j * 7919) % records;
      map.set(listingKey(i), listingOf(i));
      const now = performance.now();
      if (now - last > longest) longest = now - last;
      last = now;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    gap(): number {
      const g = longest;
      longest = 0;
      return g;
    },
    async stop(): Promise<void> {
      stop = true;
      await done;
    },
  };
}

export async function probeOffHeapCheckpoint(dir: string, records: number): Promise<Sample[]> {
  const copy = join(dirname(dir), 'checkpoint');
  const map = await OffHeapMap.open<string, unknown>({ dir, imageEvery: false });
  const rows: Sample[] = [];
  try {
    const writer = busyWriter(map, records);
    const started = performance.now();
    const cp = await map.checkpoint(copy);
    const during = writer.gap();
    // As long a window without a checkpoint: what the writer's turns cost anyway on this machine.
    await new Promise((resolve) => setTimeout(resolve, Math.max(50, performance.now() - started)));
    const before = writer.gap();
    await writer.stop();
    await map.durable();
    rows.push(
      { case: 'checkpoint of the live map', metric: 'time', value: cp.ms, unit: 'ms', better: 'lower' },
      { case: 'longest write pause during it', metric: 'time', value: during, unit: 'ms', better: 'lower' },
      { case: 'longest write pause, no checkpoint', metric: 'time', value: before, unit: 'ms', better: 'lower' },
    );
  } finally {
    await map.close();
  }
  const probe = records >> 1;
  const started = performance.now();
  const again = await OffHeapMap.open<string, unknown>({ dir: copy });
  try {
    const value = again.get(listingKey(probe));
    const ms = performance.now() - started;
    checkListing(probe, value);
    const { source, imageRejected } = again.openStats;
    if (source !== 'image') throw new Error(`the checkpoint opened by ${source} (${imageRejected})`);
    if (again.size !== records) throw new Error(`the checkpoint holds ${again.size} records, expected ${records}`);
    return [timeSample(START_CASE, ms), ...rows, ...memorySamples()];
  } finally {
    await again.close();
  }
}
