/**
 * The payload of a change message (FORMAT.md, "Payload"): one msgpack array of 1..maxChanges changes, each a
 * `WriteOp` (the protocol's write operation, which a KV batch carries on the wire too),
 *
 *   set:    [1, key: str, value: bin]     the value's bytes exactly as the client sent them
 *   delete: [2, key: str]
 *
 * applied in order. Any msgpack encoder can produce it: integers, arrays, strings and bins may use any of their
 * msgpack widths. The decoder here is strict and reads only that subset (no maps, floats, extensions, nil), checks
 * every length against the limits before it reads, and accepts exactly one value with no trailing byte, so that a
 * hostile payload costs no more than its own size and ends in a typed error naming the offset.
 */
import { isUtf8 } from 'node:buffer';
import { deleteOp, setOp, type WriteOp } from '@heapless/client/protocol';
import { ReplicaError } from '../errors.js';
import { type ChangeLimits, DEFAULT_CHANGE_LIMITS } from './change-format.js';

/** The op of a set in the payload. */
export const OP_SET = 1;
/** The op of a delete in the payload. */
export const OP_DELETE = 2;

/** msgpack type bytes used here (the msgpack spec's names). */
const FIXARRAY = 0x90;
const ARRAY16 = 0xdc;
const ARRAY32 = 0xdd;
const FIXSTR = 0xa0;
const STR8 = 0xd9;
const STR16 = 0xda;
const STR32 = 0xdb;
const BIN8 = 0xc4;
const BIN16 = 0xc5;
const BIN32 = 0xc6;
/** The byte width of each msgpack integer type above the fixints: uint 8/16/32/64 (0xcc-0xcf), int 8-64 (0xd0-0xd3). */
const INT_WIDTHS: Readonly<Record<number, number>> = {
  204: 1,
  205: 2,
  206: 4,
  207: 8,
  208: 1,
  209: 2,
  210: 4,
  211: 8,
};

/**
 * Encodes `changes` as one payload, in the shortest msgpack widths. Throws INVALID_ARGUMENT for a change that is
 * not a set or a delete, INVALID_KEY for a key that is not a well-formed string, KEY_TOO_LARGE, VALUE_TOO_LARGE,
 * TOO_MANY_CHANGES (none, or over `maxChanges`).
 */
export function encodeChanges(changes: readonly WriteOp[], limits: ChangeLimits = DEFAULT_CHANGE_LIMITS): Uint8Array {
  if (changes.length === 0 || changes.length > limits.maxChanges)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES',
      `${changes.length} changes, a message holds 1 to ${limits.maxChanges}`,
    );
  const keyBytes = new Array<number>(changes.length);
  let size = headerSize(ARRAY, changes.length);
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i]!;
    const key: unknown = change.key;
    if (typeof key !== 'string')
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_KEY', `change ${i}: a key is a string, got ${typeof key}`);
    if (!key.isWellFormed())
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_KEY', `change ${i}: the key has a lone surrogate`);
    const k = Buffer.byteLength(key);
    if (k > limits.maxKeyBytes)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE',
        `change ${i}: key of ${k} bytes, the limit is ${limits.maxKeyBytes}`,
      );
    keyBytes[i] = k;
    size += 2 + headerSize(STR, k) + k; // array header, op, key
    if (change.type === 'set') {
      if (!(change.value instanceof Uint8Array))
        throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `change ${i}: a set's value is a Uint8Array`);
      const v = change.value.length;
      if (v > limits.maxValueBytes)
        throw new ReplicaError(
          'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE',
          `change ${i}: value of ${v} bytes, the limit is ${limits.maxValueBytes}`,
        );
      size += headerSize(BIN, v) + v;
    } else if (change.type !== 'delete') {
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `change ${i}: type must be 'set' or 'delete'`);
    }
  }
  const out = Buffer.allocUnsafe(size);
  let at = writeHeader(out, 0, ARRAY, changes.length);
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i]!;
    const k = keyBytes[i]!;
    if (change.type === 'set') {
      out[at++] = FIXARRAY | 3;
      out[at++] = OP_SET;
    } else {
      out[at++] = FIXARRAY | 2;
      out[at++] = OP_DELETE;
    }
    at = writeHeader(out, at, STR, k);
    at += out.write(change.key, at, k, 'utf8');
    if (change.type === 'set') {
      const value = change.value;
      at = writeHeader(out, at, BIN, value.length);
      out.set(value, at);
      at += value.length;
    }
  }
  return out;
}

/**
 * Decodes one payload into its changes. Set values are views of `payload` (no copy): they stay valid as long as the
 * caller does not reuse the payload's memory. Throws MALFORMED_MESSAGE (not the documented msgpack shape: a wrong
 * type, an unknown op, a truncated value, a trailing byte; the message names the offset), INVALID_KEY (a key that
 * is not UTF-8), KEY_TOO_LARGE, VALUE_TOO_LARGE, TOO_MANY_CHANGES.
 */
export function decodeChanges(payload: Uint8Array, limits: ChangeLimits = DEFAULT_CHANGE_LIMITS): WriteOp[] {
  return new PayloadReader(payload, limits).readAll();
}

/** A cursor over one payload; one instance per decode. */
class PayloadReader {
  private at = 0;
  private readonly view: DataView;
  private readonly text: Buffer;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly limits: ChangeLimits,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  readAll(): WriteOp[] {
    const count = this.arrayLength('the payload');
    if (count === 0 || count > this.limits.maxChanges)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES',
        `${count} changes, a message holds 1 to ${this.limits.maxChanges}`,
      );
    const changes: WriteOp[] = [];
    for (let i = 0; i < count; i++) changes.push(this.change(i));
    if (this.at !== this.bytes.length)
      throw this.malformed(`${this.bytes.length - this.at} bytes after the last change`, this.at);
    return changes;
  }

  private change(index: number): WriteOp {
    const start = this.at;
    const length = this.arrayLength(`change ${index}`);
    const op = this.uint(`the op of change ${index}`);
    if (op === OP_SET) {
      if (length !== 3) throw this.malformed(`change ${index}: a set is [1, key, value], got ${length} items`, start);
      const key = this.key(index);
      return setOp(key, this.value(index));
    }
    if (op === OP_DELETE) {
      if (length !== 2) throw this.malformed(`change ${index}: a delete is [2, key], got ${length} items`, start);
      return deleteOp(this.key(index));
    }
    throw this.malformed(`change ${index}: unknown op ${op}`, start);
  }

  private key(index: number): string {
    const start = this.at;
    const length = this.itemLength(STR, `the key of change ${index}`, `change ${index}: a key is a msgpack str`);
    if (length > this.limits.maxKeyBytes)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE',
        `change ${index}: key of ${length} bytes at offset ${start}, the limit is ${this.limits.maxKeyBytes}`,
      );
    const from = this.take(length, start);
    if (!isUtf8(this.bytes.subarray(from, this.at)))
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_KEY',
        `change ${index}: the key at offset ${start} is not valid UTF-8`,
      );
    return this.text.toString('utf8', from, this.at);
  }

  private value(index: number): Uint8Array {
    const start = this.at;
    const length = this.itemLength(BIN, `the value of change ${index}`, `change ${index}: a value is a msgpack bin`);
    if (length > this.limits.maxValueBytes)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE',
        `change ${index}: value of ${length} bytes at offset ${start}, the limit is ${this.limits.maxValueBytes}`,
      );
    const from = this.take(length, start);
    return this.bytes.subarray(from, this.at);
  }

  private arrayLength(what: string): number {
    return this.itemLength(ARRAY, what, `${what} is a msgpack array`);
  }

  /**
   * Reads the header of an item of the family `types` and returns its length (the count of an array, the bytes of
   * a str or bin); MALFORMED_MESSAGE, saying `expected`, when the type byte is of another family.
   */
  private itemLength(types: LengthTypes, what: string, expected: string): number {
    const start = this.at;
    const type = this.byte(what);
    if (type >= types.fix && type < types.fix + types.fixLimit) return type - types.fix;
    if (types.u8 !== 0 && type === types.u8) return this.need(1, start) && this.bytes[this.at++]!;
    if (type === types.u16) return this.need(2, start) && this.u16();
    if (type === types.u32) return this.need(4, start) && this.u32();
    throw this.malformed(`${expected}, found type byte 0x${hex(type)}`, start);
  }

  /** Steps over the `length` bytes of an item that began at `start`; returns where they begin. */
  private take(length: number, start: number): number {
    this.need(length, start);
    const from = this.at;
    this.at += length;
    return from;
  }

  /** A non-negative integer in any msgpack integer width (positive fixint, uint 8-64, int 8-64). */
  private uint(what: string): number {
    const start = this.at;
    const type = this.byte(what);
    if (type <= 0x7f) return type;
    const width = INT_WIDTHS[type];
    if (width === undefined)
      throw this.malformed(`${what} is a msgpack integer, found type byte 0x${hex(type)}`, start);
    this.need(width, start);
    const signed = type >= 0xd0;
    let value: number;
    if (width === 1) value = signed ? this.view.getInt8(this.at) : this.view.getUint8(this.at);
    else if (width === 2) value = signed ? this.view.getInt16(this.at) : this.view.getUint16(this.at);
    else if (width === 4) value = signed ? this.view.getInt32(this.at) : this.view.getUint32(this.at);
    else {
      const big = signed ? this.view.getBigInt64(this.at) : this.view.getBigUint64(this.at);
      // Any op beyond the safe range is unknown anyway; keep it recognisable in the message.
      value = big >= 0n && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : -1;
    }
    this.at += width;
    return value;
  }

  private byte(what: string): number {
    if (this.at >= this.bytes.length) throw this.malformed(`truncated: ${what} is missing`, this.at);
    return this.bytes[this.at++]!;
  }

  /** Throws unless `count` more bytes are there; returns a truthy value so that it chains with `&&`. */
  private need(count: number, start: number): true {
    if (this.bytes.length - this.at < count)
      throw this.malformed(
        `truncated: the item at offset ${start} needs ${count} bytes, ${this.bytes.length - this.at} are left`,
        start,
      );
    return true;
  }

  private u16(): number {
    const v = this.view.getUint16(this.at);
    this.at += 2;
    return v;
  }

  private u32(): number {
    const v = this.view.getUint32(this.at);
    this.at += 4;
    return v;
  }

  private malformed(what: string, offset: number): ReplicaError {
    return new ReplicaError(
      'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
      `${what} (offset ${offset} of ${this.bytes.length})`,
    );
  }
}

function hex(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}

/**
 * The type bytes of one msgpack length-prefixed family: the fix form (type | n, for n below `fixLimit`; 0 when the
 * family has none) and the forms with an 8-, 16- and 32-bit length (0 when it has no 8-bit one).
 */
interface LengthTypes {
  readonly fix: number;
  readonly fixLimit: number;
  readonly u8: number;
  readonly u16: number;
  readonly u32: number;
}

const ARRAY: LengthTypes = { fix: FIXARRAY, fixLimit: 16, u8: 0, u16: ARRAY16, u32: ARRAY32 };
const STR: LengthTypes = { fix: FIXSTR, fixLimit: 32, u8: STR8, u16: STR16, u32: STR32 };
const BIN: LengthTypes = { fix: 0, fixLimit: 0, u8: BIN8, u16: BIN16, u32: BIN32 };

/** The bytes of the shortest header of `types` for length `n`. */
function headerSize(types: LengthTypes, n: number): number {
  if (n < types.fixLimit) return 1;
  if (types.u8 !== 0 && n < 0x100) return 2;
  return n < 0x10000 ? 3 : 5;
}

/** Writes the shortest header of `types` for length `n` at `at`; returns the offset after it. */
function writeHeader(out: Buffer, at: number, types: LengthTypes, n: number): number {
  if (n < types.fixLimit) {
    out[at] = types.fix | n;
    return at + 1;
  }
  if (types.u8 !== 0 && n < 0x100) {
    out[at] = types.u8;
    out[at + 1] = n;
    return at + 2;
  }
  if (n < 0x10000) {
    out[at] = types.u16;
    out.writeUInt16BE(n, at + 1);
    return at + 3;
  }
  out[at] = types.u32;
  out.writeUInt32BE(n, at + 1);
  return at + 5;
}
