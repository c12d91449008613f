import type { FieldSpec, StructValue } from '@heapless/struct';
import { Packr } from 'msgpackr';
import { HeaplessError } from '../protocol/heapless-error.js';
import { MsgpackDecoder } from '../protocol/msgpack-decoder.js';
import { MSGPACK_OPTIONS } from '../protocol/msgpack-options.js';
import { isWellFormed } from '../protocol/well-formed.js';
import { StructLayout } from '../struct/struct-layout.js';
import type { StructView } from '../struct/struct-view.js';

/** Turns values into the bytes a KV server stores, and back. */
export interface Codec<V> {
  encode(value: V): Uint8Array;
  decode(bytes: Uint8Array): V;
}

/** Per-write options, as the KV actor takes them. */
export interface KvWriteOptions {
  /** Resolve only once the write is fsynced (survives kill -9 and power loss). */
  sync?: boolean;
}

/**
 * What the KV actor's `scan` takes: keys with `prefix`, in [`gte`, `lt`), after `cursor`, at most `limit` (default
 * 100, max 10000).
 */
export interface KvScanOptions {
  prefix?: string;
  gte?: string;
  lt?: string;
  limit?: number;
  /** The `cursor` of the previous page: the page starts after it. */
  cursor?: string;
}

/**
 * One page of the KV actor's `scan`: entries in key order (the byte order of the keys' UTF-8, which is Unicode code
 * point order), and the cursor of the next page if any.
 */
export interface KvScanPage {
  entries: [string, Uint8Array][];
  cursor: string | undefined;
}

/**
 * The KV methods a collection uses; a `connect<KvActor>` or `httpClient<KvActor>` ref has them.
 * `scan` is optional in the type because a server need not expose it; a collection's `scan` needs it.
 */
export interface KvRemote {
  get(key: string): Promise<Uint8Array | undefined>;
  getMany(keys: string[]): Promise<(Uint8Array | undefined)[]>;
  set(key: string, value: Uint8Array, opts?: KvWriteOptions): Promise<unknown>;
  delete(key: string, opts?: KvWriteOptions): Promise<boolean>;
  has(key: string): Promise<boolean>;
  scan?(opts: KvScanOptions): Promise<KvScanPage>;
}

/** What a collection's `scan` takes; ids, not keys: the collection adds its prefix. */
export interface ScanOptions {
  /** Only ids ≥ `gte`. */
  gte?: string;
  /** Only ids < `lt`. */
  lt?: string;
  /** At most this many entries (the server's default 100, at most 10000). */
  limit?: number;
  /** The `cursor` of the previous page: this page starts after it. */
  cursor?: string;
}

/** One page of a collection's `scan`: `[id, value]` in id order, and the cursor of the next page (undefined at the end). */
export interface ScanResult<R> {
  entries: [id: string, value: R][];
  cursor: string | undefined;
}

/** msgpack (plain maps, readable by any msgpack library), one encoder and decoder per collection. */
export function msgpackCodec<V>(): Codec<V> {
  const packr = new Packr(MSGPACK_OPTIONS);
  const decoder = new MsgpackDecoder();
  return { encode: (v) => packr.pack(v), decode: (b) => decoder.unpack(b) as V };
}

/** Throws `BAD_ARGUMENTS` unless `part` (of a key) is a string with no lone surrogate. */
function checkPart(what: string, part: unknown): void {
  if (typeof part !== 'string') throw new HeaplessError('BAD_ARGUMENTS', `${what} is a string, got ${typeof part}`);
  if (!isWellFormed(part)) {
    throw new HeaplessError(
      'BAD_ARGUMENTS',
      `${what} is not well-formed UTF-16 (a lone surrogate): ${JSON.stringify(part)}`,
    );
  }
}

/**
 * What every collection does with keys: `prefix + id` on the way out, ids back on the way in. `W` is what `set`
 * takes, `R` what `get` gives; subclasses say how bytes are made and read.
 */
abstract class KeyedCollection<W, R> {
  protected readonly kv: KvRemote;
  /** Every key of the collection starts with it. */
  readonly prefix: string;

  /** Throws `BAD_ARGUMENTS` for a prefix that is not a well-formed string. */
  constructor(kv: KvRemote, prefix: string) {
    checkPart('the prefix', prefix);
    this.kv = kv;
    this.prefix = prefix;
  }

  /** `prefix + id`; throws `BAD_ARGUMENTS` for an id that is not a well-formed string (no key could name it). */
  protected keyOf(id: string): string {
    checkPart('an id', id);
    return this.prefix + id;
  }

  protected abstract encode(value: W): Uint8Array;
  protected abstract read(bytes: Uint8Array, id: string): R;

  /**
   * The value of `id`, or undefined. Rejects with the call's `HeaplessError` or the reader's; with `BAD_ARGUMENTS`,
   * before sending anything, for an id with a lone surrogate (as every method here).
   */
  async get(id: string): Promise<R | undefined> {
    const b = await this.kv.get(this.keyOf(id));
    return b === undefined || b === null ? undefined : this.read(b, id);
  }

  /** The values of `ids` in their order, undefined where missing; one call. */
  async getMany(ids: readonly string[]): Promise<(R | undefined)[]> {
    const bytes = await this.kv.getMany(ids.map((id) => this.keyOf(id)));
    const out = new Array<R | undefined>(bytes.length);
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      out[i] = b === undefined || b === null ? undefined : this.read(b, ids[i]!);
    }
    return out;
  }

  /** Stores `value` under `id`, encoded once here; resolves once durable (fsynced with `sync`). */
  async set(id: string, value: W, opts?: KvWriteOptions): Promise<void> {
    await this.kv.set(this.keyOf(id), this.encode(value), opts);
  }

  /** Removes `id`; true if it was there. */
  async delete(id: string, opts?: KvWriteOptions): Promise<boolean> {
    return this.kv.delete(this.keyOf(id), opts);
  }

  /** Whether `id` has a value. */
  async has(id: string): Promise<boolean> {
    return this.kv.has(this.keyOf(id));
  }

  /**
   * One page of the collection's ids in order (bounded by `gte`/`lt`), with their values; pass the page's `cursor`
   * back for the next one. Rejects with `UNKNOWN_METHOD` when the server does not expose `scan`.
   */
  async scan(opts: ScanOptions = {}): Promise<ScanResult<R>> {
    const kv = this.kv;
    if (typeof kv.scan !== 'function') throw new HeaplessError('UNKNOWN_METHOD', 'this KV ref has no scan method');
    const p = this.prefix;
    const page = await kv.scan({
      prefix: p,
      gte: opts.gte === undefined ? undefined : this.keyOf(opts.gte),
      lt: opts.lt === undefined ? undefined : this.keyOf(opts.lt),
      limit: opts.limit,
      cursor: opts.cursor === undefined ? undefined : this.keyOf(opts.cursor),
    });
    const entries = new Array<[string, R]>(page.entries.length);
    for (let i = 0; i < entries.length; i++) {
      const [key, b] = page.entries[i]!;
      const id = key.slice(p.length);
      entries[i] = [id, this.read(b, id)];
    }
    const c = page.cursor;
    return { entries, cursor: c === undefined || c === null ? undefined : c.slice(p.length) };
  }
}

/**
 * Typed values under one key prefix of a KV server: each value is encoded once, here, and the server stores and
 * returns those bytes without decoding them (FORMAT.md). Keys are `prefix + id`.
 */
export class Collection<V> extends KeyedCollection<V, V> {
  readonly #codec: Codec<V>;

  constructor(kv: KvRemote, prefix: string, codec: Codec<V> = msgpackCodec<V>()) {
    super(kv, prefix);
    this.#codec = codec;
  }

  protected encode(value: V): Uint8Array {
    return this.#codec.encode(value);
  }

  protected read(bytes: Uint8Array): V {
    return this.#codec.decode(bytes);
  }
}

/**
 * Struct values under one key prefix (FORMAT.md, "Struct values"). `set` lays the value out once, here (or sends a
 * view's bytes as they are); `get`, `getMany` and `scan` give flyweight views over the reply frame's bytes: nothing
 * is decoded or copied until a field is read, and reading a numeric field allocates nothing.
 *
 * Each result is its own small view object (fields `_u8`, `_dv`, `_off`, `_key`), all results of one frame share
 * one DataView (pipelined gets answered in one frame too), and a view keeps its frame's buffer alive while it is
 * referenced; the collection itself keeps the last frame's buffer until its next read. Writing a view's fields
 * changes the local bytes only; `set(id, view)` sends them.
 *
 * A stored value that is not `layout.size` bytes long (written through another codec or layout) is refused with
 * `STRUCT_SIZE_MISMATCH` naming the id.
 */
export class StructCollection<F extends FieldSpec> extends KeyedCollection<
  StructValue<F> | StructView<F>,
  StructView<F>
> {
  /** The layout of every value. */
  readonly layout: StructLayout<F>;
  /** The buffer of the last frame read from, with whole-buffer views of it, so that views of a frame share them. */
  #buffer: ArrayBufferLike | null = null;
  #u8: Uint8Array = new Uint8Array(0);
  #dv: DataView = new DataView(new ArrayBuffer(0));

  constructor(kv: KvRemote, prefix: string, layout: StructLayout<F>) {
    super(kv, prefix);
    this.layout = layout;
  }

  /** A plain object is laid out (throws STRUCT_INVALID_VALUE / STRUCT_FIELD_OVERFLOW); a view's bytes go as they are. */
  protected encode(value: StructValue<F> | StructView<F>): Uint8Array {
    return this.layout.isView(value) ? this.layout.bytesOf(value) : this.layout.encode(value as StructValue<F>);
  }

  protected read(bytes: Uint8Array, id: string): StructView<F> {
    if (bytes.length !== this.layout.size) {
      throw new HeaplessError(
        'STRUCT_SIZE_MISMATCH',
        `value of ${JSON.stringify(this.prefix + id)} is ${bytes.length} bytes, the layout ${this.layout.signature} is ${this.layout.size}`,
      );
    }
    if (bytes.buffer !== this.#buffer) {
      this.#buffer = bytes.buffer;
      this.#u8 = new Uint8Array(bytes.buffer);
      this.#dv = new DataView(bytes.buffer);
    }
    return this.layout._viewAt(this.#u8, this.#dv, bytes.byteOffset, id);
  }
}

/** Options of {@link collection}: a codec (msgpack by default) or a struct layout. */
export type CollectionOptions<V> = { codec?: Codec<V>; struct?: undefined };

/**
 * `collection(kv, prefix, { struct: layout })`: struct values read through flyweight views over the received frame.
 * The value type comes from the layout (`Infer<typeof layout>`).
 */
export function collection<F extends FieldSpec>(
  kv: KvRemote,
  prefix: string,
  opts: { struct: StructLayout<F> },
): StructCollection<F>;
/** `collection<V>(kv, prefix, { codec })`: typed values under `prefix`, msgpack by default. */
export function collection<V>(kv: KvRemote, prefix: string, opts?: CollectionOptions<V>): Collection<V>;
export function collection<V>(
  kv: KvRemote,
  prefix: string,
  opts: CollectionOptions<V> | { struct: StructLayout<FieldSpec>; codec?: undefined } = {},
): Collection<V> | StructCollection<FieldSpec> {
  if (opts.struct !== undefined) {
    if (!(opts.struct instanceof StructLayout) || opts.codec !== undefined) {
      throw new HeaplessError(
        'STRUCT_INVALID_LAYOUT',
        'collection() takes either a codec or a struct layout made by struct() of @heapless/client',
      );
    }
    return new StructCollection(kv, prefix, opts.struct);
  }
  return new Collection<V>(kv, prefix, opts.codec);
}
