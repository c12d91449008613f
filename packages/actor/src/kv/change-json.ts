import type { KvChange, MsgpackDecoder } from '@heapless/client/protocol';
import { unpackBody } from '../server/http-reply.js';

/** The JSON of one change's event data. */
export function changeJson(decoder: MsgpackDecoder, [sequence, key, value]: KvChange): string {
  if (value === null) return JSON.stringify({ sequence, key, deleted: true });
  try {
    const json = JSON.stringify({ sequence, key, value: unpackBody(decoder, value) });
    if (json !== undefined) return json;
  } catch {
    // not msgpack (unpackBody is strict: no trailing bytes, no 0xc1), or no JSON form (a bigint): sent as bytes
  }
  return JSON.stringify({ sequence, key, bytes: Buffer.from(value).toString('base64') });
}
