import { HeaplessError } from '@heapless/client/protocol';
import type { OffHeapMap, OffHeapMapStats } from '@heapless/offheap';
import { Actor } from './actor.js';
import { ActorError } from './errors.js';

/** 1 KiB: keys are names, not data; long ones cost index probes and every log line that names them. */
const DEFAULT_MAX_KEY_BYTES = 1024;
/** 1 MiB: a value must fit comfortably in one frame (16 MiB) and one arena segment. */
const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;

/** Options of {@link KvActor}. */
export interface KvActorOptions {
  /** Every write waits until it is fsynced, unless the call says `{ sync: false }`; default false. */
  sync?: boolean;
  /** Default 1 KiB (UTF-8 bytes). */
  maxKeyBytes?: number;
  /** Default 1 MiB. */
  maxValueBytes?: number;
}

/** Per-write options. */
export interface WriteOptions {
  /** Acknowledge only once the write is fsynced (survives kill -9 and power loss). */
  sync?: boolean;
}

/** What `stats()` answers: the map's memory accounting (off-heap bytes) and this process's JS heap. */
export interface KvStats extends OffHeapMapStats {
  heapUsedBytes: number;
}

/** The part of a persisted map the actor needs beyond a memory-only one: waiting for fsync. */
interface Flushable {
  flush?(): Promise<void>;
}

const OFFHEAP_TO_WIRE: Record<string, 'KEY_TOO_LARGE' | 'VALUE_TOO_LARGE' | 'BAD_ARGUMENTS'> = {
  HEAPLESS_ERR_OFFHEAP_KEY_TOO_LARGE: 'KEY_TOO_LARGE',
  HEAPLESS_ERR_OFFHEAP_VALUE_TOO_LARGE: 'VALUE_TOO_LARGE',
  HEAPLESS_ERR_OFFHEAP_INVALID_ARGUMENT: 'BAD_ARGUMENTS',
};

/**
 * The key-value actor: string keys, values stored as the bytes the client sent (msgpack the client encoded once, or
 * a struct layout) and returned as they are, so the server never decodes or re-encodes a value. It owns its map and
 * closes it in `onStop()`.
 *
 * Errors: `BAD_ARGUMENTS` (a key that is not a string, a value that is not bytes), `KEY_TOO_LARGE`,
 * `VALUE_TOO_LARGE`; the map's own failures pass through.
 */
export class KvActor extends Actor {
  static override readonly exposed = [
    'get',
    'getMany',
    'set',
    'setMany',
    'delete',
    'has',
    'size',
    'stats',
    'flush',
  ] as const;
  readonly #map: OffHeapMap<string, unknown> & Flushable;
  readonly #sync: boolean;
  readonly #maxKeyBytes: number;
  readonly #maxValueBytes: number;

  constructor(map: OffHeapMap<string, unknown>, opts: KvActorOptions = {}) {
    super();
    this.#map = map;
    this.#sync = opts.sync ?? false;
    this.#maxKeyBytes = opts.maxKeyBytes ?? DEFAULT_MAX_KEY_BYTES;
    this.#maxValueBytes = opts.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
    if (this.#sync && typeof (map as Flushable).flush !== 'function') {
      throw new ActorError('HEAPLESS_ERR_INVALID_OPTION', 'sync needs a persisted map (one with flush())');
    }
  }

  /** The stored bytes of `key`'s value, or undefined. */
  get(key: string): Uint8Array | undefined {
    this.#checkKey(key);
    return this.#map.getBytes(key);
  }

  /** The stored bytes of each key's value (undefined where missing), in the order of `keys`. */
  getMany(keys: string[]): (Uint8Array | undefined)[] {
    if (!Array.isArray(keys)) throw new HeaplessError('BAD_ARGUMENTS', 'getMany(keys: string[])');
    const out = new Array<Uint8Array | undefined>(keys.length);
    for (let i = 0; i < keys.length; i++) out[i] = this.get(keys[i]);
    return out;
  }

  /** Stores `value`'s bytes as they are under `key`; with `sync`, resolves once they are fsynced. */
  set(key: string, value: Uint8Array, opts?: WriteOptions): void | Promise<void> {
    this.#checkKey(key);
    this.#checkValue(value);
    const sync = this.#wantsSync(opts);
    this.#write(() => this.#map.setBytes(key, value));
    if (sync) return this.#map.flush!();
  }

  /** Stores every `[key, value]` pair in order; checks them all before writing any. */
  setMany(entries: [string, Uint8Array][], opts?: WriteOptions): void | Promise<void> {
    if (!Array.isArray(entries)) throw new HeaplessError('BAD_ARGUMENTS', 'setMany(entries: [key, value][])');
    for (const e of entries) {
      if (!Array.isArray(e) || e.length !== 2) throw new HeaplessError('BAD_ARGUMENTS', 'an entry is [key, value]');
      this.#checkKey(e[0]);
      this.#checkValue(e[1]);
    }
    const sync = this.#wantsSync(opts);
    for (const [k, v] of entries) this.#write(() => this.#map.setBytes(k, v));
    if (sync) return this.#map.flush!();
  }

  /** Removes `key`; true if it was there. With `sync`, resolves once the removal is fsynced. */
  delete(key: string, opts?: WriteOptions): boolean | Promise<boolean> {
    this.#checkKey(key);
    const sync = this.#wantsSync(opts);
    let had = false;
    this.#write(() => {
      had = this.#map.delete(key);
    });
    return sync ? this.#map.flush!().then(() => had) : had;
  }

  has(key: string): boolean {
    this.#checkKey(key);
    return this.#map.has(key);
  }

  size(): number {
    return this.#map.size;
  }

  stats(): KvStats {
    return { ...this.#map.stats(), heapUsedBytes: process.memoryUsage().heapUsed };
  }

  /** Resolves once every write so far is fsynced (at once for a memory-only map). */
  async flush(): Promise<void> {
    await this.#map.flush?.();
  }

  override async onStop(): Promise<void> {
    await this.#map.close();
  }

  /** Whether this write must wait for fsync; throws before anything is written when the map cannot. */
  #wantsSync(opts: WriteOptions | undefined): boolean {
    const sync = opts?.sync ?? this.#sync;
    if (sync && typeof this.#map.flush !== 'function') {
      throw new HeaplessError('BAD_ARGUMENTS', 'sync writes need a persisted map; this one is memory-only');
    }
    return sync;
  }

  #write(f: () => void): void {
    try {
      f();
    } catch (e) {
      const code = OFFHEAP_TO_WIRE[(e as { code?: string }).code ?? ''];
      if (code !== undefined) throw new HeaplessError(code, (e as Error).message, { cause: e });
      throw e;
    }
  }

  #checkKey(key: unknown): asserts key is string {
    if (typeof key !== 'string') throw new HeaplessError('BAD_ARGUMENTS', `a key is a string, got ${typeof key}`);
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only long keys need counting.
    if (key.length * 3 > this.#maxKeyBytes && Buffer.byteLength(key) > this.#maxKeyBytes) {
      throw new HeaplessError(
        'KEY_TOO_LARGE',
        `key of ${Buffer.byteLength(key)} bytes, the limit is ${this.#maxKeyBytes}`,
      );
    }
  }

  #checkValue(value: unknown): asserts value is Uint8Array {
    if (!(value instanceof Uint8Array)) {
      throw new HeaplessError('BAD_ARGUMENTS', 'a value is bytes (msgpack bin): encode it on the client');
    }
    if (value.length > this.#maxValueBytes) {
      throw new HeaplessError('VALUE_TOO_LARGE', `value of ${value.length} bytes, the limit is ${this.#maxValueBytes}`);
    }
  }
}
