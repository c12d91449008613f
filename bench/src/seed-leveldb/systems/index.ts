/**
 * Loads a `seed-leveldb` system by name. Each adapter is imported only when chosen, so a child process loads one
 * native module, and a system that cannot load (an optional dependency, a package not built yet) fails alone.
 */
import type { SeedStore, SeedSystem } from '../seed-store.js';

const loaders: Readonly<Record<string, () => Promise<SeedSystem>>> = {
  map: async () => (await import('./map-system.js')).mapSystem,
  'classic-level': async () => (await import('./classic-level-system.js')).classicLevelSystem,
  lmdb: async () => (await import('./lmdb-system.js')).lmdbSystem,
  rocksdb: async () => (await import('./rocksdb-system.js')).loadRocksdbSystem(),
  'heapless-engine': async () => (await import('./heapless-engine-system.js')).loadHeaplessEngineSystem(),
  'heapless-level': async () => (await import('./heapless-level-system.js')).loadHeaplessLevelSystem(),
  'heapless-engine-bloom0': async () =>
    (await import('./heapless-engine-system.js')).loadHeaplessEngineSystem({ bloomBitsPerKey: 0 }),
  ...Object.fromEntries(
    (['none', 'snappy', 'lz4', 'zstd', 'deflate'] as const).map((compression) => [
      `heapless-engine-${compression}`,
      async () => (await import('./heapless-engine-system.js')).loadHeaplessEngineSystem({ compression }),
    ]),
  ),
};

/** Returns the system named `name`; throws on an unknown name. */
export async function loadSeedSystem(name: string): Promise<SeedSystem> {
  const load = Object.hasOwn(loaders, name) ? loaders[name] : undefined;
  if (load === undefined) throw new Error(`seed-leveldb has no system '${name}'`);
  return load();
}

export type { SeedStore, SeedSystem };
