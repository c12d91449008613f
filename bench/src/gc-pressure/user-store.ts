import type { User } from './user.js';

/**
 * What `gc-pressure` needs from a store of users. All reads are synchronous (every system here has synchronous
 * reads); writes may return a promise (lmdb's batched `put`), which the workload does not await one by one but
 * every {@link WRITE_WINDOW} writes, so that asynchronous stores batch as they are designed to.
 */
export interface UserStore {
  set(key: string, user: User): Promise<unknown> | undefined;
  get(key: string): User | undefined;
  /** The user's age, through the cheapest path the system has (a flyweight view for struct maps). */
  getAge(key: string): number | undefined;
  /** How many users are at least `minAge`, by one pass over every record on this thread. */
  countOlder(minAge: number): number;
  /** The same on worker threads (OffHeapMap's parallel `scan`); absent where the system has no parallel scan. */
  countOlderParallel?(minAge: number): Promise<number>;
  close(): Promise<void>;
}

/** Writes in flight before the workload waits for an asynchronous store. */
export const WRITE_WINDOW = 10_000;

/** How a system opens a store; `dir` is an empty directory the system may use. */
export type UserStoreFactory = (dir: string) => Promise<UserStore>;
