/**
 * Loads a `gc-pressure` system by name; each adapter is imported only when chosen (one per child process).
 */
import type { UserStoreFactory } from '../user-store.js';

const loaders: Readonly<Record<string, () => Promise<UserStoreFactory>>> = {
  'map-object': async () => (await import('./map-object-store.js')).openMapObjectStore,
  'map-msgpack': async () => (await import('./map-msgpack-store.js')).openMapMsgpackStore,
  lmdb: async () => (await import('./lmdb-user-store.js')).openLmdbUserStore,
  'offheap-msgpack': async () => (await import('./offheap-user-store.js')).loadOffHeapFactory('msgpack'),
  'offheap-struct': async () => (await import('./offheap-user-store.js')).loadOffHeapFactory('struct'),
};

/** Returns the store factory of `name`; throws on an unknown name. */
export async function loadUserStoreFactory(name: string): Promise<UserStoreFactory> {
  const load = Object.hasOwn(loaders, name) ? loaders[name] : undefined;
  if (load === undefined) throw new Error(`gc-pressure has no system '${name}'`);
  return load();
}
