/** `map-object`: `Map<string, User>`, every user a live JS object — seed 003's HashMap, and the baseline. */
import type { User } from '../user.js';
import type { UserStore, UserStoreFactory } from '../user-store.js';

class MapObjectStore implements UserStore {
  private readonly map = new Map<string, User>();

  set(key: string, user: User): undefined {
    this.map.set(key, user);
    return undefined;
  }

  get(key: string): User | undefined {
    return this.map.get(key);
  }

  getAge(key: string): number | undefined {
    return this.map.get(key)?.age;
  }

  countOlder(minAge: number): number {
    let n = 0;
    for (const user of this.map.values()) if (user.age >= minAge) n++;
    return n;
  }

  async close(): Promise<void> {
    this.map.clear();
  }
}

export const openMapObjectStore: UserStoreFactory = async () => new MapObjectStore();
