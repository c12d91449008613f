import { Unpackr } from 'msgpackr';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

/** `__proto__` in UTF-8: only bytes holding it can hold a map key of that name. */
const PROTO = [0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f] as const;
/** Horspool's shifts for PROTO: how far its last byte's position may move past a byte seen there. */
const SHIFT = new Uint8Array(256).fill(PROTO.length);
for (let j = 0; j < PROTO.length - 1; j++) SHIFT[PROTO[j]] = PROTO.length - 1 - j;

/**
 * Decodes msgpack as the protocol reads it (maps as plain objects, `bin` as views of the bytes) without renaming a
 * key. msgpackr decodes a map key `__proto__` as `__proto_`, so that a decoded map cannot set an object's
 * prototype; a batch's metadata name `__proto__` would then arrive as another name, and overwrite that one. Where
 * the bytes hold `__proto__` (rare; one scan of the bytes decides), maps are decoded as `Map`s and rebuilt as plain
 * objects in which `__proto__` is an own data property: the name arrives as sent, and no prototype is set.
 *
 * msgpackr's record extension (not part of the protocol, yet decoded) renames the same key in a record; a record
 * with a `__proto_` field in such bytes is refused, since what was sent cannot be told.
 */
export class MsgpackDecoder {
  readonly #objects = new Unpackr(MSGPACK_OPTIONS);
  readonly #maps = new Unpackr({ ...MSGPACK_OPTIONS, mapsAsObjects: false });

  /**
   * The value `bytes` hold. Throws msgpackr's error when they are not msgpack, and an `Error` when a map key has no
   * string form (a map or an array) or a record's field may have been renamed; callers report these as BAD_FRAME.
   */
  unpack(bytes: Uint8Array): unknown {
    if (!holdsProto(bytes)) return this.#objects.unpack(bytes);
    return asObjects(this.#maps.unpack(bytes));
  }
}

/** Whether `bytes` hold `__proto__`: on Node with Buffer's native search, elsewhere with `holdsProtoPortable`. */
function holdsProto(bytes: Uint8Array): boolean {
  if (typeof Buffer !== 'function') return holdsProtoPortable(bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf('__proto__') >= 0;
}

/**
 * Whether `bytes` hold `__proto__`, by Horspool's search: it reads about one byte in eight of most input, and every
 * byte of a run of underscores (600 KB of them: 5 ms, where msgpackr takes 9 to decode them). Exported for tests.
 */
export function holdsProtoPortable(bytes: Uint8Array): boolean {
  const last = PROTO.length - 1;
  for (let i = 0; i + last < bytes.length; i += SHIFT[bytes[i + last]]) {
    let j = last;
    while (j >= 0 && bytes[i + j] === PROTO[j]) j--;
    if (j < 0) return true;
  }
  return false;
}

/** `value` with each `Map` made a plain object (keys as msgpackr names them), arrays and records converted in place. */
function asObjects(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) {
      const key = keyOf(k);
      // An own data property: assigning `out.__proto__` would set the prototype instead.
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: asObjects(v), enumerable: true, writable: true, configurable: true });
      else out[key] = asObjects(v);
    }
    return out;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = asObjects(value[i]);
    return value;
  }
  if (Object.getPrototypeOf(value) === Object.prototype) {
    // Only msgpackr's record extension makes plain objects when maps are decoded as Maps.
    const record = value as Record<string, unknown>;
    if (Object.hasOwn(record, '__proto_')) {
      throw new Error('a record (msgpackr extension) with a __proto_ field: it may have been __proto__');
    }
    for (const k of Object.keys(record)) record[k] = asObjects(record[k]);
  }
  return value;
}

/** A map key as msgpackr names it in an object: strings as they are, scalars as text, anything else refused. */
function keyOf(k: unknown): string {
  if (typeof k === 'string') return k;
  if (typeof k === 'number' || typeof k === 'boolean' || typeof k === 'bigint' || k == null) return String(k);
  throw new Error(`a map key of type ${Array.isArray(k) ? 'array' : typeof k} has no string form`);
}
