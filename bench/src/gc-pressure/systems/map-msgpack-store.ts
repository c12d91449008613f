/**
 * `map-msgpack`: `Map<string, Buffer>` of msgpackr-encoded users, with msgpackr's record structures (the field
 * names are written once, not per record). The keys and Buffer objects stay on the heap; the bytes are external.
 */
import { Packr } from 'msgpackr';
import type { User } from '../user.js';
import type { UserStore, UserStoreFactory } from '../user-store.js';

class MapMsgpackStore implements UserStore {
  private readonly map = new Map<string, Uint8Array>();
  private readonly packr = new Packr({ structures: [] });

  set(key: string, user: User): undefined {
    this.map.set(key, this.packr.pack(user));
    return undefined;
  }

  get(key: string): User | undefined {
    const bytes = this.map.get(key);
    return bytes === undefined ? undefined : (this.packr.unpack(bytes) as User);
  }

  getAge(key: string): number | undefined {
    return this.get(key)?.age;
  }

  countOlder(minAge: number): number {
    let n = 0;
    for (const bytes of this.map.values()) if ((this.packr.unpack(bytes) as User).age >= minAge) n++;
    return n;
  }

  async close(): Promise<void> {
    this.map.clear();
  }
}

export const openMapMsgpackStore: UserStoreFactory = async () => new MapMsgpackStore();
