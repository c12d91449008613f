/**
 * `classic-level` (LevelDB 1.23 through abstract-level 3), through the shared `LevelStore`. Default options (4 MiB
 * write buffer, 8 MiB block cache, Snappy), UTF-8 keys and values; its iterators do not fill the block cache.
 */
import { ClassicLevel } from 'classic-level';
import type { SeedSystem } from '../seed-store.js';
import { LevelStore } from './level-store.js';

export const classicLevelSystem: SeedSystem = {
  persistent: true,
  async open(dir) {
    const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    return new LevelStore(db);
  },
};
