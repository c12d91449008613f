/**
 * The phases of `seed-leveldb` in the order they run. One store is loaded by `put` and then read, scanned and
 * emptied; the batch and fsync phases each start from a fresh, empty store so that their figures do not depend on
 * what the earlier phases left behind.
 *
 * - `put`: N awaited puts, one at a time (the store is empty), then `du` of the data directory.
 * - `get-seq`: N gets in key-number order, each value compared with `value<i>`.
 * - `get-random`: N gets of uniformly random existing keys (one fixed pseudo-random sequence for every system).
 * - `get-missing`: N gets of keys `key<N..2N-1>`, which sort among the existing keys but are absent.
 * - `scan`: one full forward iteration over the N entries.
 * - `delete`: N awaited deletes, one at a time, then `du` of the data directory.
 * - `batch-100`, `batch-1000`: N puts in atomic batches of 100 / 1000, each batch awaited, into a fresh store.
 * - `put-sync`: min(N, 20,000) awaited puts with fsync, into a fresh store; also their latency percentiles.
 */
export const SEED_PHASES = [
  'put',
  'get-seq',
  'get-random',
  'get-missing',
  'scan',
  'delete',
  'batch-100',
  'batch-1000',
  'put-sync',
] as const;

/** Phases that need the store loaded by `put`; if any is selected, the load runs even when `put` is not. */
export const PHASES_ON_LOADED_STORE: ReadonlySet<string> = new Set([
  'put',
  'get-seq',
  'get-random',
  'get-missing',
  'scan',
  'delete',
]);

/** Number of fsynced puts in `put-sync` (seed 000's synchronous-write experiment, shortened). */
export const SYNC_PUTS = 20_000;
