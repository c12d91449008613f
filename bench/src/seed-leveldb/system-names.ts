/** The systems of `seed-leveldb`, in table order; the loaders are in `systems/index.ts` (child process only). */
export const SEED_SYSTEMS = [
  'map',
  'classic-level',
  'lmdb',
  'rocksdb',
  'heapless-engine',
  'heapless-level',
  // The engine with each block codec (`heapless-engine` runs its default): seed 000's compression experiment.
  'heapless-engine-none',
  'heapless-engine-snappy',
  'heapless-engine-lz4',
  'heapless-engine-zstd',
  'heapless-engine-deflate',
  // The engine without bloom filters (the default keeps 10 bits per key): seed 000's bloom filter experiment, read
  // in the get-missing rows beside heapless-engine's.
  'heapless-engine-bloom0',
] as const;

export type SeedSystemName = (typeof SEED_SYSTEMS)[number];
