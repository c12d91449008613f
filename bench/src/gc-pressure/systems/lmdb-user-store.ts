/**
 * `lmdb`: lmdb-js with its msgpack encoding and shared record structures, writes through its automatically batched
 * `put` (not fsynced: `noSync`, this benchmark is about memory), reads through its synchronous `get`. The data lives
 * in a memory map, so it shows in RSS, not in the heap.
 */
import { open, type RootDatabase } from 'lmdb';
import type { User } from '../user.js';
import type { UserStore, UserStoreFactory } from '../user-store.js';

class LmdbUserStore implements UserStore {
  constructor(private readonly db: RootDatabase<User, string>) {}

  set(key: string, user: User): Promise<boolean> {
    return this.db.put(key, user);
  }

  get(key: string): User | undefined {
    return this.db.get(key);
  }

  getAge(key: string): number | undefined {
    return this.db.get(key)?.age;
  }

  countOlder(minAge: number): number {
    let n = 0;
    for (const { value } of this.db.getRange()) if (value.age >= minAge) n++;
    return n;
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

export const openLmdbUserStore: UserStoreFactory = async (dir) =>
  new LmdbUserStore(open<User, string>({ path: dir, noSync: true, sharedStructuresKey: Symbol.for('structures') }));
