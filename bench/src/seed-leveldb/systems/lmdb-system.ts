/**
 * `lmdb` (lmdb-js 3): `put` with its automatic batching (each put awaited, as the seed does), `putSync` inside
 * `transactionSync` for batches, and its synchronous `get` (so lmdb has no separate `(getSync)` case).
 *
 * Durability is fixed when the environment opens: stores for the non-fsync phases open with `noSync: true`, which
 * matches what the other systems promise without `sync` (written to the OS, not flushed); the `put-sync` store opens
 * with lmdb's default, where a put's promise resolves once the commit is flushed to disk.
 */
import { open, type RootDatabase } from 'lmdb';
import type { SeedStore, SeedSystem } from '../seed-store.js';

class LmdbStore implements SeedStore {
  constructor(private readonly db: RootDatabase<string, string>) {}

  put(key: string, value: string): Promise<boolean> {
    return this.db.put(key, value);
  }

  readonly putDurable = (key: string, value: string): Promise<boolean> => this.db.put(key, value);

  get(key: string): string | undefined {
    return this.db.get(key);
  }

  delete(key: string): Promise<boolean> {
    return this.db.remove(key);
  }

  putBatch(keys: readonly string[], values: readonly string[]): undefined {
    this.db.transactionSync(() => {
      for (let i = 0; i < keys.length; i++) this.db.putSync(keys[i]!, values[i]!);
    });
    return undefined;
  }

  scan(): number {
    let count = 0;
    for (const { value } of this.db.getRange()) if (value !== undefined) count++;
    return count;
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

export const lmdbSystem: SeedSystem = {
  persistent: true,
  async open(dir, { durable }) {
    return new LmdbStore(open<string, string>({ path: dir, encoding: 'string', noSync: !durable }));
  },
};
