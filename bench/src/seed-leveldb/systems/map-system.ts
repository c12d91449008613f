/**
 * `map`: a plain `Map<string, string>`, the upper bound — no persistence, no encoding, no thread hop.
 * Its scan follows insertion order (a Map is not sorted), which for this workload is the order of the keys written.
 */
import type { SeedStore, SeedSystem } from '../seed-store.js';

class MapStore implements SeedStore {
  private readonly map = new Map<string, string>();

  put(key: string, value: string): undefined {
    this.map.set(key, value);
    return undefined;
  }

  get(key: string): string | undefined {
    return this.map.get(key);
  }

  delete(key: string): undefined {
    this.map.delete(key);
    return undefined;
  }

  putBatch(keys: readonly string[], values: readonly string[]): undefined {
    for (let i = 0; i < keys.length; i++) this.map.set(keys[i]!, values[i]!);
    return undefined;
  }

  scan(): number {
    let count = 0;
    for (const [, value] of this.map) if (value !== undefined) count++;
    return count;
  }

  async close(): Promise<void> {
    this.map.clear();
  }
}

export const mapSystem: SeedSystem = {
  persistent: false,
  open: async () => new MapStore(),
};
