/**
 * What `seed-leveldb` needs from a store. Each system implements it with its own natural API; the workload calls
 * it the same way for all.
 *
 * Methods may be synchronous or asynchronous, as the system's API is: the workload awaits a returned promise before
 * issuing the next operation, and a synchronous call is complete when it returns. Both mean "one operation at a
 * time, each finished before the next" — the seed's semantics — without charging a synchronous API a microtask.
 */
export interface SeedStore {
  /** One write, durable to the OS (not fsynced). */
  put(key: string, value: string): Promise<unknown> | undefined;
  /** One write acknowledged after fsync; absent for systems that cannot persist. */
  readonly putDurable?: (key: string, value: string) => Promise<unknown> | undefined;
  /** The value, or `undefined` when the key is absent. */
  get(key: string): Promise<string | undefined> | string | undefined;
  /**
   * A second, synchronous read API for systems whose `get` is asynchronous (classic-level's and the engine's
   * `getSync`); measured as the `(getSync)` cases. Absent when `get` is already synchronous.
   */
  readonly getSync?: (key: string) => string | undefined;
  delete(key: string): Promise<unknown> | undefined;
  /** Writes `keys[i] → values[i]` for every i as one atomic batch. */
  putBatch(keys: readonly string[], values: readonly string[]): Promise<unknown> | undefined;
  /** Iterates every entry forward (values included) and returns how many there were. */
  scan(): Promise<number> | number;
  /** Releases everything the store opened. */
  close(): Promise<void>;
}

/** How a system opens a store. */
export interface SeedSystem {
  /** False for memory-only systems: no bytes on disk and no fsync phase. */
  readonly persistent: boolean;
  /**
   * Opens a store in the empty directory `dir`. `durable` is true for the store of the `put-sync` phase; systems
   * whose durability is fixed at open time (lmdb's `noSync`) use it, others choose per write.
   */
  open(dir: string, options: { readonly durable: boolean }): Promise<SeedStore>;
}
