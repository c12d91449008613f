/**
 * A map's engine keys for tools that read a map's engine directory without opening the map (`heapless engine dump`
 * and `stats`): the engine must not know the map's layout (it imports nothing of ours), so the layout of
 * persistence.ts is told here, once, for them.
 *
 * A directory is a map's when its engine holds the map's `00 meta` key and that decodes as a map's metadata: the map
 * writes it, durably, before its first record, and nothing else writes a key starting with byte 00 and "meta" that
 * decodes so. (A map's directory also holds its image file, MAPIMAGE, beside the engine's files, but only once the
 * map wrote one; a map opened with `image: false` never does.)
 */
import type { Engine } from '@heapless/engine';
import { unpack } from 'msgpackr';
import { type MapMeta, META_KEY, NS_DATA, NS_META, NS_USER_META } from './persistence.js';
import { StoredValue } from './stored-value.js';

/** What one engine key of a map's directory is (`name`: the key without its namespace byte). */
export type MapEngineKey =
  /** One of the map's records: `name` is the key as the user wrote it (its UTF-8 for a string key). */
  | { readonly kind: 'record'; readonly name: Uint8Array }
  /** A named metadata value of the map's user (`map.meta`): `name` is the name's UTF-8. */
  | { readonly kind: 'user-meta'; readonly name: Uint8Array }
  /** The map's own bookkeeping (`meta`, `structures`, `count`, `image`, `sync`): `name` is its ASCII name. */
  | { readonly kind: 'map-meta'; readonly name: Uint8Array };

/**
 * The map's metadata (how its keys and values are encoded) when `engine` holds a map's directory, else undefined:
 * no `00 meta` key, or one that does not decode as a map's. Never throws for what the key holds.
 */
export function readMapMeta(engine: Engine): MapMeta | undefined {
  const raw = engine.getSync(META_KEY);
  if (raw === undefined) return undefined;
  let meta: unknown;
  try {
    meta = unpack(raw);
  } catch {
    return undefined;
  }
  if (typeof meta !== 'object' || meta === null) return undefined;
  const m = meta as Partial<MapMeta>;
  const ok =
    typeof m.format === 'number' &&
    (m.keys === 'string' || m.keys === 'bytes') &&
    (m.codec === 'msgpack' || m.codec === 'struct');
  return ok ? { format: m.format!, keys: m.keys!, codec: m.codec!, struct: m.struct ?? null } : undefined;
}

/** What the engine key `key` of a map's directory is, or undefined for a key no map writes. */
export function mapEngineKey(key: Uint8Array): MapEngineKey | undefined {
  if (key.length === 0) return undefined;
  const name = key.subarray(1);
  switch (key[0]) {
    case NS_DATA:
      return { kind: 'record', name };
    case NS_USER_META:
      return { kind: 'user-meta', name };
    case NS_META:
      return { kind: 'map-meta', name };
    default:
      return undefined;
  }
}

/** The engine key of the map record whose key is `key` (the user's key bytes: a string key's UTF-8). */
export function mapRecordKey(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out[0] = NS_DATA;
  out.set(key, 1);
  return out;
}

/**
 * What a map record's engine value holds (FORMAT.md §7): the value bytes (a view of `value`), the key's version and
 * its expiry (ms since the epoch, 0: none). A format-1 value (no header) is told by its lack of the header's marker,
 * and a format-1 struct value, exactly the layout's size, also by `structSize` when given.
 */
export function mapRecordValue(
  value: Uint8Array,
  structSize: number | null = null,
): { value: Uint8Array; version: number; expiresAt: number } {
  const stored = new StoredValue(structSize);
  const n = stored.read(value, 0, value.length, 0);
  return {
    value: value.subarray(stored.start, stored.start + n),
    version: stored.version,
    expiresAt: stored.expiresAt,
  };
}

/** The engine key range of every record of a map: [`gte`, `lt`), metadata outside it. */
export const MAP_RECORD_RANGE: { readonly gte: Uint8Array; readonly lt: Uint8Array } = Object.freeze({
  gte: Uint8Array.of(NS_DATA),
  lt: Uint8Array.of(NS_DATA + 1),
});
