/**
 * `classic-level` (LevelDB 1.23 through abstract-level 3): its promise API for every case, plus its `getSync` for
 * the `(getSync)` cases. Default options (4 MiB write buffer, 8 MiB block cache, Snappy), UTF-8 keys and values.
 */
import { ClassicLevel } from 'classic-level';
import { countByNextv } from '../scan-count.js';
import type { SeedStore, SeedSystem } from '../seed-store.js';

class ClassicLevelStore implements SeedStore {
  readonly getSync: (key: string) => string | undefined;

  constructor(private readonly db: ClassicLevel<string, string>) {
    this.getSync = (key) => db.getSync(key);
  }

  put(key: string, value: string): Promise<void> {
    return this.db.put(key, value);
  }

  readonly putDurable = (key: string, value: string): Promise<void> => this.db.put(key, value, { sync: true });

  get(key: string): Promise<string | undefined> {
    return this.db.get(key);
  }

  delete(key: string): Promise<void> {
    return this.db.del(key);
  }

  putBatch(keys: readonly string[], values: readonly string[]): Promise<void> {
    return this.db.batch(keys.map((key, i) => ({ type: 'put' as const, key, value: values[i]! })));
  }

  scan(): Promise<number> {
    return countByNextv(this.db.iterator());
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

export const classicLevelSystem: SeedSystem = {
  persistent: true,
  async open(dir) {
    const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    return new ClassicLevelStore(db);
  },
};
