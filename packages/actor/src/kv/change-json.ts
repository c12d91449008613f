/**
 * The JSON forms of stored values, one rule for every JSON answer that carries them (a listing's entries, a
 * getMany's, the SSE watch's changes): a value that is msgpack with an exact JSON form (null, booleans, finite
 * numbers, strings, arrays and maps of these) is `"value": V`; any other (not msgpack, a struct record, or msgpack
 * holding bytes, a bigint, a date, undefined...) is `"bytes": "<base64 of the stored bytes>"`. So one value never
 * keeps a listing from answering, and nothing is sent in a form that reads back as another value.
 */
import type { KvChange, MsgpackDecoder } from '@heapless/client/protocol';
import { unpackBody } from '../server/http-reply.js';

/** Thrown by `exactly` where JSON would change a value; never leaves this module. */
const NO_JSON_FORM = new Error('no exact JSON form');

/** A `JSON.stringify` replacer refusing what JSON would turn into another value (`this[key]` is before `toJSON`). */
function exactly(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (typeof raw === 'string' || typeof raw === 'boolean' || raw === null) return value;
  if (typeof raw === 'number' && Number.isFinite(raw)) return value;
  if (typeof raw === 'object' && (Array.isArray(raw) || Object.getPrototypeOf(raw) === Object.prototype)) return value;
  throw NO_JSON_FORM;
}

/** `bytes` decoded to JSON text when they have an exact JSON form (see above), else undefined. */
export function exactJson(decoder: MsgpackDecoder, bytes: Uint8Array): string | undefined {
  try {
    return JSON.stringify(unpackBody(decoder, bytes), exactly);
  } catch {
    return undefined; // not msgpack (unpackBody is strict: no trailing bytes, no 0xc1), or no exact JSON form
  }
}

/** `fields` and the stored `bytes` as one JSON object: `"value"` as exact JSON, else `"bytes"` as base64. */
export function withValueJson(decoder: MsgpackDecoder, fields: Record<string, unknown>, bytes: Uint8Array): string {
  const value = exactJson(decoder, bytes);
  const head = JSON.stringify(fields).slice(0, -1);
  const sep = head.length > 1 ? ',' : '';
  if (value !== undefined) return `${head}${sep}"value":${value}}`;
  return `${head}${sep}"bytes":"${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}"}`;
}

/** The JSON of one change's event data: `{ sequence, key, value | bytes }`, or `{ sequence, key, deleted: true }`. */
export function changeJson(decoder: MsgpackDecoder, [sequence, key, value]: KvChange): string {
  if (value === null) return JSON.stringify({ sequence, key, deleted: true });
  return withValueJson(decoder, { sequence, key }, value);
}
