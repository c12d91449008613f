/**
 * The `SeedStore` of an abstract-level 3 database (classic-level, @heapless/level): its promise API for every case,
 * its `getSync` for the `(getSync)` cases, `{ sync: true }` for fsynced puts, `batch([...])` for batches and
 * `iterator(options).nextv` for the scan. One class for both, so that their figures differ only by the database.
 */
import { countByNextv, type NextvIterator } from '../scan-count.js';
import type { SeedStore } from '../seed-store.js';

/** What the workload uses of an abstract-level database with UTF-8 keys and values. */
export interface LevelDatabase {
  put(key: string, value: string, options?: { sync?: boolean }): Promise<void>;
  get(key: string): Promise<string | undefined>;
  getSync(key: string): string | undefined;
  del(key: string): Promise<void>;
  batch(operations: { type: 'put'; key: string; value: string }[]): Promise<void>;
  iterator(options?: { fillCache?: boolean }): NextvIterator;
  close(): Promise<void>;
}

export class LevelStore implements SeedStore {
  readonly getSync: (key: string) => string | undefined;

  /** `scanOptions`: the options of the scan's iterator. */
  constructor(
    private readonly db: LevelDatabase,
    private readonly scanOptions: { fillCache?: boolean } = {},
  ) {
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
    return countByNextv(this.db.iterator(this.scanOptions));
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
