/**
 * `rocksdb` (@nxtedition/rocksdb, an optional dependency that loads its prebuilt binary): abstract-level 1 API.
 *
 * - Gets go through `getMany([key])`, which yields `undefined` for an absent key; its `get` rejects with
 *   LEVEL_NOT_FOUND instead, and an exception per miss would measure V8's error path rather than RocksDB.
 *   (`get` itself is implemented as `getMany([key])` by this binding, so hits cost the same either way.)
 * - Its `put` drops write options, so fsynced puts are one-entry batches written with `{ sync: true }`.
 * The package ships no type declarations; the few methods used are declared here.
 */
import { createRequire } from 'node:module';
import { SystemUnavailableError } from '../../harness/benchmark.js';
import { countByNextv } from '../scan-count.js';
import type { SeedStore, SeedSystem } from '../seed-store.js';

type BatchOp = { type: 'put'; key: string; value: string };

interface RocksIterator {
  nextv(size: number): Promise<[string, string][]>;
  close(): Promise<void>;
}

interface RocksLevel {
  open(): Promise<void>;
  put(key: string, value: string): Promise<void>;
  getMany(keys: string[]): Promise<(string | undefined)[]>;
  del(key: string): Promise<void>;
  batch(ops: BatchOp[], options?: { sync?: boolean }): Promise<void>;
  iterator(): RocksIterator;
  close(): Promise<void>;
}

type RocksLevelClass = new (location: string, options: object) => RocksLevel;

class RocksdbStore implements SeedStore {
  constructor(private readonly db: RocksLevel) {}

  put(key: string, value: string): Promise<void> {
    return this.db.put(key, value);
  }

  readonly putDurable = (key: string, value: string): Promise<void> =>
    this.db.batch([{ type: 'put', key, value }], { sync: true });

  async get(key: string): Promise<string | undefined> {
    return (await this.db.getMany([key]))[0];
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

/** Loads the binding; throws {@link SystemUnavailableError} when the optional dependency or its binary is missing. */
export function loadRocksdbSystem(): SeedSystem {
  let RocksLevelCtor: RocksLevelClass;
  try {
    const require = createRequire(import.meta.url);
    ({ RocksLevel: RocksLevelCtor } = require('@nxtedition/rocksdb') as { RocksLevel: RocksLevelClass });
  } catch (error) {
    throw new SystemUnavailableError(`@nxtedition/rocksdb did not load: ${(error as Error).message.split('\n')[0]}`);
  }
  return {
    persistent: true,
    async open(dir) {
      const db = new RocksLevelCtor(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
      await db.open();
      return new RocksdbStore(db);
    },
  };
}
