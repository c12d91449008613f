/**
 * The benchmarks `pnpm bench <name>` knows. Definitions are light modules (see {@link BenchmarkDefinition}); both
 * the parent and the child look benchmarks up here by name.
 */
import type { BenchmarkDefinition } from './benchmark.js';

const loaders: Readonly<Record<string, () => Promise<BenchmarkDefinition>>> = {
  batch: async () => (await import('../batch/definition.js')).batch,
  codec: async () => (await import('../codec/definition.js')).codec,
  'gc-pressure': async () => (await import('../gc-pressure/definition.js')).gcPressure,
  'seed-leveldb': async () => (await import('../seed-leveldb/definition.js')).seedLeveldb,
  replica: async () => (await import('../replica/definition.js')).replica,
  'seed-open-read': async () => (await import('../seed-open-read/definition.js')).seedOpenRead,
  server: async () => (await import('../server/definition.js')).server,
  startup: async () => (await import('../startup/definition.js')).startup,
  watch: async () => (await import('../watch/definition.js')).watch,
};

/** Names of every benchmark, for help and error messages. */
export function benchmarkNames(): string[] {
  return Object.keys(loaders);
}

/** Returns the definition named `name`; throws a message listing the known names when there is none. */
export async function loadDefinition(name: string): Promise<BenchmarkDefinition> {
  const load = Object.hasOwn(loaders, name) ? loaders[name] : undefined;
  if (load === undefined) throw new Error(`unknown benchmark '${name}' (known: ${benchmarkNames().join(', ')})`);
  return load();
}
