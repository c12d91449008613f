/**
 * Filling a persisted OffHeapMap before a benchmark's timed part (the server's preload, the startup fixture): N
 * writes, awaiting durability every {@link STEP} so the engine never buffers the whole load in one event-loop turn,
 * then a close (which writes the map image). Imported dynamically, so a benchmark's parent process stays light.
 */
import type { OffHeapMap, OffHeapMapOpenOptions } from '@heapless/offheap';
import type { RunContext } from './harness/benchmark.js';

/** Writes per awaited step. */
const STEP = 10_000;

/** Opens the map in `dir` (with `engine` options), calls `write(map, i)` for every i < N (progress as `label`), and closes it. */
export async function fillOffHeapMap(
  ctx: RunContext,
  dir: string,
  label: string,
  write: (map: OffHeapMap<string, unknown>, i: number) => void,
  engine: OffHeapMapOpenOptions['engine'] = {},
): Promise<void> {
  const { OffHeapMap } = await import('@heapless/offheap');
  const map = await OffHeapMap.open<string, unknown>({ dir, engine });
  try {
    const ticker = ctx.progress(label, ctx.records);
    for (let i = 0; i < ctx.records; i++) {
      write(map, i);
      if ((i + 1) % STEP === 0) {
        await map.durable();
        ticker.update(i + 1);
      }
    }
    await map.durable();
    ticker.finish();
  } finally {
    await map.close();
  }
}
