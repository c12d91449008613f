/**
 * A map's named metadata (`map.meta`): small byte values under names, such as a schema id or the stream position
 * the records are at, kept beside the records and out of their key space. A name is never a key: `get`, `size`,
 * iteration, `range`, scans and images see records only.
 *
 * Where they live: a persisted map keeps them in its engine only, under NS_USER_META + the name's UTF-8 (FORMAT.md
 * §7), read back with the engine's point lookup and written in the same engine batch as the records they describe
 * (map-batch.ts). A memory-only map keeps them in a `Map` of copies here. They are few and small, so neither costs
 * the map's memory anything that counts.
 */
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { illFormedKey, utf8Length, writeUtf8 } from '../key-bytes.js';
import type { MapPersistence } from '../persist/persistence.js';

/** A name is at most 255 bytes of UTF-8: names are labels, not data. */
export const MAX_META_NAME_BYTES = 255;
/** A metadata value is at most 64 KiB: a schema hash or a stream position, never a record. */
export const MAX_META_VALUE_BYTES = 64 * 1024;

/**
 * The UTF-8 length of `name`; throws INVALID_ARGUMENT (not a string, empty, a lone surrogate) or KEY_TOO_LARGE
 * (more than MAX_META_NAME_BYTES).
 */
export function metaNameLength(name: unknown): number {
  if (typeof name !== 'string') throw invalidArgument(`a metadata name is a string, got ${typeof name}`);
  if (name.length === 0) throw invalidArgument('a metadata name is not empty');
  if (!name.isWellFormed()) throw illFormedKey(name);
  const n = utf8Length(name);
  if (n > MAX_META_NAME_BYTES) {
    throw new OffHeapError(
      OffHeapErrorCodes.KEY_TOO_LARGE,
      `metadata name of ${n} bytes exceeds ${MAX_META_NAME_BYTES}`,
    );
  }
  return n;
}

/** Throws INVALID_ARGUMENT (not a Uint8Array) or VALUE_TOO_LARGE (more than MAX_META_VALUE_BYTES). */
export function checkMetaValue(value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalidArgument('a metadata value is a Uint8Array');
  if (value.length > MAX_META_VALUE_BYTES) {
    throw new OffHeapError(
      OffHeapErrorCodes.VALUE_TOO_LARGE,
      `metadata value of ${value.length} bytes exceeds ${MAX_META_VALUE_BYTES}`,
    );
  }
}

/** The engine key of metadata `name` (whose UTF-8 is `length` bytes): `prefix` then the UTF-8. */
export function metaEngineKey(prefix: number, name: string, length: number): Uint8Array {
  const out = new Uint8Array(length + 1);
  out[0] = prefix;
  writeUtf8(name, out, 1);
  return out;
}

/** A memory-only map's metadata: copies, by name. */
export class MemoryMetadata {
  private readonly values = new Map<string, Uint8Array>();

  get(name: string): Uint8Array | undefined {
    return this.values.get(name);
  }

  /** Stores a copy of `value` (null removes the name). */
  apply(name: string, value: Uint8Array | null): void {
    if (value === null) this.values.delete(name);
    else this.values.set(name, new Uint8Array(value));
  }

  names(): string[] {
    return [...this.values.keys()];
  }
}

/** What `MapMetadata` writes a name through: a fresh batch of the map (map-batch.ts). */
export interface MetaBatch<R> {
  setMeta(name: string, value: Uint8Array): this;
  deleteMeta(name: string): this;
  write(options?: { sync?: boolean }): Promise<R>;
}

/**
 * `map.meta`: reads a map's named metadata; writes one name as a batch of its own (through the map's batch, so a
 * write of metadata alone is as atomic and as durable as any). Several names, or names and records together, go in
 * one `map.batch()`.
 */
export class MapMetadata<R> {
  constructor(
    private readonly persistence: MapPersistence | null,
    private readonly memory: MemoryMetadata,
    private readonly newBatch: () => MetaBatch<R>,
    private readonly checkOpen: () => void,
    private readonly prefix: number,
  ) {}

  /**
   * A copy of the value stored under `name`, or undefined. Synchronous: a persisted map reads it from its engine
   * (its memtable, or a table block, read from disk if not cached). Throws INVALID_ARGUMENT / KEY_TOO_LARGE (bad
   * name), CLOSED, or the engine's errors (CorruptionError).
   */
  get(name: string): Uint8Array | undefined {
    this.checkOpen();
    const length = metaNameLength(name);
    if (this.persistence === null) return this.memory.get(name)?.slice();
    return this.persistence.metaValue(metaEngineKey(this.prefix, name, length));
  }

  /** True if `name` has a value. Same errors as `get`. */
  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Every name that has a value, in the byte order of their UTF-8. Throws CLOSED, the engine's errors. */
  names(): string[] {
    this.checkOpen();
    const names =
      this.persistence === null
        ? this.memory.names()
        : this.persistence.metaNames(this.prefix).map((b) => Buffer.from(b).toString('utf8'));
    return names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }

  /**
   * Stores `value` (copied) under `name`, as a batch of one: applied before this returns, the promise resolves once
   * durable (as `MapBatch.write`). Throws INVALID_ARGUMENT / KEY_TOO_LARGE (bad name), INVALID_ARGUMENT /
   * VALUE_TOO_LARGE (bad value); the promise rejects as `MapBatch.write`'s does.
   */
  set(name: string, value: Uint8Array, options?: { sync?: boolean }): Promise<R> {
    return this.newBatch().setMeta(name, value).write(options);
  }

  /** Removes `name` (no error if it has no value), as a batch of one; as `set`. */
  delete(name: string, options?: { sync?: boolean }): Promise<R> {
    return this.newBatch().deleteMeta(name).write(options);
  }
}
