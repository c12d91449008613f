/**
 * `offheap-msgpack` and `offheap-struct`: @heapless/offheap's `OffHeapMap`, memory-only (`new OffHeapMap()`), with
 * msgpack values or a fixed struct layout. For the struct map, `getAge` positions one reused flyweight view on the
 * record (`locate`) and reads `age` in place, without decoding.
 *
 * The package is imported dynamically through a specifier held in a variable, so that the bench compiles and runs
 * while the package is being written; until it is built, the systems report "not available". The API used is
 * declared here and checked at load time.
 */
import { SystemUnavailableError } from '../../harness/benchmark.js';
import { countOlder, countOlderByView } from '../scan-worker.js';
import type { User } from '../user.js';
import type { UserStore, UserStoreFactory } from '../user-store.js';

/** The package name, in a variable so that TypeScript does not resolve it at compile time. */
const OFFHEAP_PACKAGE: string = '@heapless/offheap';

/** Longest `name` and `email` of `makeUser` for 5M users are 12 and 27 UTF-8 bytes. */
const NAME_BYTES = 16;
const EMAIL_BYTES = 32;

interface AgeView {
  readonly age: number;
}

interface AgeCursor {
  next(): boolean;
  readonly value: User;
  readonly view: AgeView;
}

interface OffHeapMapLike {
  set(key: string, value: User): unknown;
  get(key: string): User | undefined;
  view(): AgeView;
  locate(key: string, view: AgeView): boolean;
  scanSync<R>(fn: (cursor: AgeCursor, arg: unknown) => R, arg?: unknown): R[];
  scan<R>(fn: { module: URL; name: string; arg: unknown }): Promise<R[]>;
  clear(): void;
  close(): Promise<void>;
}

/** The worker module of the parallel scan (its `countOlder` is the same loop as {@link countOlder}). */
const SCAN_MODULE = new URL('../scan-worker.js', import.meta.url);

interface OffHeapModule {
  OffHeapMap: new (options?: object) => OffHeapMapLike;
  struct(fields: object): object;
  utf8(maxBytes: number): object;
  array(element: string, length: number): object;
}

class OffHeapUserStore implements UserStore {
  /** The reused flyweight view of struct maps; `null` for msgpack maps. */
  private readonly view: AgeView | null;

  constructor(
    private readonly map: OffHeapMapLike,
    struct: boolean,
  ) {
    this.view = struct ? map.view() : null;
  }

  set(key: string, user: User): undefined {
    this.map.set(key, user);
    return undefined;
  }

  get(key: string): User | undefined {
    return this.map.get(key);
  }

  getAge(key: string): number | undefined {
    const view = this.view;
    if (view === null) return this.map.get(key)?.age;
    return this.map.locate(key, view) ? view.age : undefined;
  }

  countOlder(minAge: number): number {
    return this.map.scanSync(this.view === null ? countOlder : countOlderByView, minAge).reduce((a, b) => a + b, 0);
  }

  async countOlderParallel(minAge: number): Promise<number> {
    const name = this.view === null ? 'countOlder' : 'countOlderByView';
    const parts = await this.map.scan<number>({ module: SCAN_MODULE, name, arg: minAge });
    return parts.reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    this.map.clear();
    await this.map.close(); // ends the scan's worker pool
  }
}

/** Imports @heapless/offheap; throws {@link SystemUnavailableError} when it is not built or lacks the API. */
export async function loadOffHeapFactory(values: 'msgpack' | 'struct'): Promise<UserStoreFactory> {
  let module: Partial<OffHeapModule>;
  try {
    module = (await import(OFFHEAP_PACKAGE)) as Partial<OffHeapModule>;
  } catch (error) {
    throw new SystemUnavailableError(`${OFFHEAP_PACKAGE} did not load: ${(error as Error).message.split('\n')[0]}`);
  }
  const { OffHeapMap, struct, utf8, array } = module;
  if (OffHeapMap === undefined || struct === undefined || utf8 === undefined || array === undefined) {
    throw new SystemUnavailableError(`${OFFHEAP_PACKAGE} does not export OffHeapMap, struct, utf8 and array yet`);
  }
  if (values === 'msgpack') return async () => new OffHeapUserStore(new OffHeapMap(), false);
  const layout = struct({
    id: 'u32',
    name: utf8(NAME_BYTES),
    email: utf8(EMAIL_BYTES),
    age: 'u8',
    friends: array('u32', 3),
  });
  return async () => new OffHeapUserStore(new OffHeapMap({ struct: layout }), true);
}
