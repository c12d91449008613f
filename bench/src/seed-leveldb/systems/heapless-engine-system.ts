/**
 * `heapless-engine` (@heapless/engine): `put`/`get`/`delete` with `{ sync }` per write, a write batch from
 * `engine.batch()` (`put` per entry, then `write()`, one atomic WAL record) for batches, `getSync` for the
 * `(getSync)` cases, and `iterator({}).nextv(n)` for the scan.
 *
 * The package is imported dynamically through a specifier held in a variable, so that the bench compiles and runs
 * while the engine is being written: when it is not built or does not export `Engine` yet, the system reports
 * "not available" instead of breaking the build or the other systems. The API used is declared here and checked
 * at load time.
 */
import { SystemUnavailableError } from '../../harness/benchmark.js';
import { countByNextv } from '../scan-count.js';
import type { SeedStore, SeedSystem } from '../seed-store.js';

/** The package name, in a variable so that TypeScript does not resolve it at compile time. */
const ENGINE_PACKAGE: string = '@heapless/engine';

type Bytes = Uint8Array | string;
type WriteOptions = { sync?: boolean };

interface EngineBatch {
  put(key: string, value: string): unknown;
  write(options?: WriteOptions): Promise<void>;
}

interface EngineIterator {
  nextv(size: number): Promise<[Bytes, Bytes][]>;
  close(): Promise<void> | void;
}

interface Engine {
  put(key: string, value: string, options?: WriteOptions): Promise<void>;
  get(key: string): Promise<Bytes | undefined>;
  getSync(key: string): Bytes | undefined;
  delete(key: string, options?: WriteOptions): Promise<void>;
  batch(): EngineBatch;
  iterator(options: object): EngineIterator;
  close(): Promise<void>;
}

interface EngineClass {
  open(dir: string, options?: object): Promise<Engine>;
}

class HeaplessEngineStore implements SeedStore {
  private readonly decoder = new TextDecoder();
  readonly getSync: (key: string) => string | undefined;

  constructor(private readonly engine: Engine) {
    this.getSync = (key) => this.text(engine.getSync(key));
  }

  private text(value: Bytes | undefined): string | undefined {
    return value === undefined || typeof value === 'string' ? value : this.decoder.decode(value);
  }

  put(key: string, value: string): Promise<void> {
    return this.engine.put(key, value);
  }

  readonly putDurable = (key: string, value: string): Promise<void> => this.engine.put(key, value, { sync: true });

  async get(key: string): Promise<string | undefined> {
    return this.text(await this.engine.get(key));
  }

  delete(key: string): Promise<void> {
    return this.engine.delete(key);
  }

  putBatch(keys: readonly string[], values: readonly string[]): Promise<void> {
    const batch = this.engine.batch();
    for (let i = 0; i < keys.length; i++) batch.put(keys[i]!, values[i]!);
    return batch.write();
  }

  scan(): Promise<number> {
    // classic-level's iterators default to fillCache: false; ask the same of ours so a scan does not evict the
    // blocks the point reads use, on both sides alike.
    return countByNextv(this.engine.iterator({ fillCache: false }));
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

/**
 * Imports @heapless/engine; throws {@link SystemUnavailableError} when it is not built or lacks `Engine.open`. Each
 * store opens with `options` (e.g. `{ compression: 'zstd' }`); an option this runtime cannot honour (the engine's
 * HEAPLESS_ERR_ENGINE_UNSUPPORTED, as zstd before Node 22.15) makes the system unavailable too.
 */
export async function loadHeaplessEngineSystem(options: object = {}): Promise<SeedSystem> {
  let module: { Engine?: Partial<EngineClass> };
  try {
    module = (await import(ENGINE_PACKAGE)) as typeof module;
  } catch (error) {
    throw new SystemUnavailableError(`${ENGINE_PACKAGE} did not load: ${(error as Error).message.split('\n')[0]}`);
  }
  const engineClass = module.Engine;
  if (typeof engineClass?.open !== 'function') {
    throw new SystemUnavailableError(`${ENGINE_PACKAGE} does not export Engine.open yet`);
  }
  const open = engineClass.open.bind(engineClass);
  return {
    persistent: true,
    open: async (dir) => {
      try {
        return new HeaplessEngineStore(await open(dir, options));
      } catch (error) {
        if ((error as { code?: unknown }).code === 'HEAPLESS_ERR_ENGINE_UNSUPPORTED') {
          throw new SystemUnavailableError((error as Error).message);
        }
        throw error;
      }
    },
  };
}
