import { Packr } from 'msgpackr';
import { HeaplessError } from './heapless-error.js';
import { illFormedArguments } from './ill-formed.js';
import { MsgpackDecoder } from './msgpack-decoder.js';
import { MSGPACK_OPTIONS } from './msgpack-options.js';

// One encoder and one decoder for the module: they keep no state between calls that a caller could see (plain maps,
// no records).
const packr = new Packr(MSGPACK_OPTIONS);
const decoder = new MsgpackDecoder();

/**
 * `value` as msgpack in the protocol's form (plain maps, never msgpackr's record extension), a new Uint8Array the
 * caller owns: encode a value once here, `set(key, pack(value))`, and the server stores and returns these bytes as
 * they are (its JSON routes decode them). Throws `BAD_ARGUMENTS` for a value msgpackr cannot encode, or one holding
 * a string with a lone surrogate, which msgpack's UTF-8 strings cannot carry.
 */
export function pack(value: unknown): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = packr.pack(value);
  } catch (cause) {
    throw new HeaplessError('BAD_ARGUMENTS', `pack: the value cannot be encoded: ${String(cause)}`, { cause });
  }
  const illFormed = illFormedArguments('pack', bytes, value);
  if (illFormed !== undefined) throw illFormed;
  return bytes;
}

/**
 * The value msgpack `bytes` hold (maps as plain objects, keys as sent, `__proto__` too; `bin` as Uint8Array views of
 * `bytes`). Throws BAD_FRAME.
 */
export function unpack(bytes: Uint8Array): unknown {
  try {
    return decoder.unpack(bytes);
  } catch (cause) {
    throw new HeaplessError('BAD_FRAME', 'unpack: the bytes are not msgpack', { cause });
  }
}
