/**
 * `heapless-level` (@heapless/level: abstract-level 3 over @heapless/engine), through the same `LevelStore` as
 * classic-level, so that its figures beside `heapless-engine`'s show what the abstract-level layer costs, and
 * beside classic-level's what the same Level code gets from another engine. Default engine options, UTF-8 keys
 * and values; the scan's iterator does not fill the block cache (`fillCache: false`), as classic-level's and the
 * engine system's do not.
 *
 * The package is imported when the system is chosen: when it is not built, the system is "not available".
 */
import type { HeaplessLevel } from '@heapless/level';
import { SystemUnavailableError } from '../../harness/benchmark.js';
import type { SeedSystem } from '../seed-store.js';
import { LevelStore } from './level-store.js';

/** Imports @heapless/level; throws {@link SystemUnavailableError} when it does not load. */
export async function loadHeaplessLevelSystem(): Promise<SeedSystem> {
  let Level: typeof HeaplessLevel;
  try {
    ({ HeaplessLevel: Level } = await import('@heapless/level'));
  } catch (error) {
    throw new SystemUnavailableError(`@heapless/level did not load: ${(error as Error).message.split('\n')[0]}`);
  }
  return {
    persistent: true,
    async open(dir) {
      const db = new Level<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
      await db.open();
      return new LevelStore(db, { fillCache: false });
    },
  };
}
