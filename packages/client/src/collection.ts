import { Packr } from 'msgpackr';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

/** Turns values into the bytes a KV server stores, and back. */
export interface Codec<V> {
  encode(value: V): Uint8Array;
  decode(bytes: Uint8Array): V;
}

/** The KV methods a collection uses; a `connect<typeof KvActor>` or `httpClient<typeof KvActor>` ref has them. */
export interface KvRemote {
  get(key: string): Promise<Uint8Array | undefined>;
  getMany(keys: string[]): Promise<(Uint8Array | undefined)[]>;
  set(key: string, value: Uint8Array, opts?: { sync?: boolean }): Promise<unknown>;
  delete(key: string, opts?: { sync?: boolean }): Promise<boolean>;
  has(key: string): Promise<boolean>;
}

/** msgpack (plain maps, readable by any msgpack library), one encoder per collection. */
export function msgpackCodec<V>(): Codec<V> {
  const packr = new Packr(MSGPACK_OPTIONS);
  return { encode: (v) => packr.pack(v), decode: (b) => packr.unpack(b) as V };
}

/**
 * Typed values under one key prefix of a KV server: each value is encoded once, here, and the server stores and
 * returns those bytes without decoding them (FORMAT.md). Keys are `prefix + id`.
 */
export class Collection<V> {
  readonly #kv: KvRemote;
  readonly #prefix: string;
  readonly #codec: Codec<V>;

  constructor(kv: KvRemote, prefix: string, codec: Codec<V> = msgpackCodec<V>()) {
    this.#kv = kv;
    this.#prefix = prefix;
    this.#codec = codec;
  }

  /** The value of `id`, decoded, or undefined. */
  async get(id: string): Promise<V | undefined> {
    const b = await this.#kv.get(this.#prefix + id);
    return b === undefined || b === null ? undefined : this.#codec.decode(b);
  }

  /** The values of `ids` in their order, undefined where missing; one call. */
  async getMany(ids: readonly string[]): Promise<(V | undefined)[]> {
    const bytes = await this.#kv.getMany(ids.map((id) => this.#prefix + id));
    return bytes.map((b) => (b === undefined || b === null ? undefined : this.#codec.decode(b)));
  }

  /** Stores `value` under `id`; resolves once durable (fsynced with `sync`). */
  async set(id: string, value: V, opts?: { sync?: boolean }): Promise<void> {
    await this.#kv.set(this.#prefix + id, this.#codec.encode(value), opts);
  }

  /** Removes `id`; true if it was there. */
  delete(id: string, opts?: { sync?: boolean }): Promise<boolean> {
    return this.#kv.delete(this.#prefix + id, opts);
  }

  has(id: string): Promise<boolean> {
    return this.#kv.has(this.#prefix + id);
  }
}

/** `new Collection<V>(kv, prefix, codec)`: typed values under `prefix`, msgpack by default. */
export function collection<V>(kv: KvRemote, prefix: string, opts: { codec?: Codec<V> } = {}): Collection<V> {
  return new Collection<V>(kv, prefix, opts.codec);
}
