/** The systems of `seed-leveldb`, in table order; the loaders are in `systems/index.ts` (child process only). */
export const SEED_SYSTEMS = ['map', 'classic-level', 'lmdb', 'rocksdb', 'heapless-engine', 'heapless-level'] as const;

export type SeedSystemName = (typeof SEED_SYSTEMS)[number];
