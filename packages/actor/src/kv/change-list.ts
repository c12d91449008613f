/**
 * Changes of a KV watch, encoded once as they are committed and kept in commit order in one growing buffer, so that
 * a push of many of them is one view of it. Each change is a msgpack array (FORMAT.md of @heapless/client, "KV
 * watch"), written here by hand from the key's UTF-8 bytes and the value's bytes, with no JS string made:
 *
 *   93                       fixarray of 3
 *   ce u32 | cb f64          sequence: uint32, or from 2^32 on a float64 holding the integer (as msgpackr writes a
 *                            number past 32 bits, so that readers get a number, never a 64-bit integer type)
 *   a0|n, d9 n, da n16, db n32 + UTF-8     key (str)
 *   c4 n, c5 n16, c6 n32 + bytes | c0      value (bin), or nil for a delete
 */

/** Small: every watch has a queue that is empty while it keeps up; lists that fill grow by doubling. */
const INITIAL_BYTES = 4096;
const INITIAL_CHANGES = 64;
/** The most a change adds to its key and value: array, sequence, str and bin headers. */
export const CHANGE_OVERHEAD = 1 + 9 + 5 + 5;
/** Bytes of the four per-change arrays (ends, keyAt, keyLength: int32; sequences: float64). */
const INDEX_BYTES = 4 + 4 + 4 + 8;

export class ChangeList {
  bytes: Buffer;
  /** Bytes used. */
  length = 0;
  count = 0;
  /** Per change: where its encoding ends, its key's offset and length in `bytes`, and its sequence. */
  ends: Int32Array;
  keyAt: Int32Array;
  keyLength: Int32Array;
  sequences: Float64Array;
  /** What `reset` keeps: a buffer of at most this many bytes stays for reuse, a larger one is let go. */
  readonly #keepBytes: number;
  readonly #firstBytes: number;
  readonly #firstChanges: number;

  /**
   * `bytes` and `changes`: the first sizes (growth doubles them); `keepBytes`: the largest buffer an emptied list
   * keeps (a queue that must shrink back once drained keeps its first size; a reused log keeps more).
   */
  constructor(bytes = INITIAL_BYTES, changes = INITIAL_CHANGES, keepBytes = bytes) {
    this.bytes = Buffer.allocUnsafeSlow(bytes);
    this.ends = new Int32Array(changes);
    this.keyAt = new Int32Array(changes);
    this.keyLength = new Int32Array(changes);
    this.sequences = new Float64Array(changes);
    this.#keepBytes = Math.max(bytes, keepBytes);
    this.#firstBytes = bytes;
    this.#firstChanges = changes;
  }

  /** Bytes this list has allocated: its buffer and its per-change arrays, used or not. */
  get allocated(): number {
    return this.bytes.length + this.ends.length * INDEX_BYTES;
  }

  /** Bytes still free in the buffer (appending no more than this never moves the buffer). */
  get free(): number {
    return this.bytes.length - this.length;
  }

  /** The sequence of the last change (-1 when empty). */
  get lastSequence(): number {
    return this.count === 0 ? -1 : this.sequences[this.count - 1]!;
  }

  /** Where change `i`'s encoding starts. */
  startOf(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }

  /** The first index in [from, to) whose sequence is greater than `after` (to if none): sequences ascend. */
  firstAfter(after: number, from: number, to: number): number {
    let lo = from;
    let hi = to;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sequences[mid]! > after) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Whether change `i`'s key starts with `prefix`. */
  keyStartsWith(i: number, prefix: Uint8Array): boolean {
    const n = prefix.length;
    if (this.keyLength[i]! < n) return false;
    const at = this.keyAt[i]!;
    const b = this.bytes;
    for (let j = 0; j < n; j++) if (b[at + j] !== prefix[j]) return false;
    return true;
  }

  /** Appends the change: `value` undefined for a delete. Copies both. */
  append(sequence: number, key: Uint8Array, value: Uint8Array | undefined): void {
    const need = CHANGE_OVERHEAD + key.length + (value === undefined ? 0 : value.length);
    this.#reserve(need);
    const b = this.bytes;
    let p = this.length;
    b[p++] = 0x93;
    if (sequence <= 0xffff_ffff) {
      b[p++] = 0xce;
      b.writeUInt32BE(sequence, p);
      p += 4;
    } else {
      b[p++] = 0xcb;
      b.writeDoubleBE(sequence, p);
      p += 8;
    }
    p = writeHeader(b, p, key.length, 0xa0, 32, 0xd9);
    const keyAt = p;
    b.set(key, p);
    p += key.length;
    if (value === undefined) b[p++] = 0xc0;
    else {
      p = writeHeader(b, p, value.length, -1, 0, 0xc4);
      b.set(value, p);
      p += value.length;
    }
    this.#record(p, keyAt, key.length, sequence);
  }

  /** Appends changes [from, to) of `other` (copied). */
  appendFrom(other: ChangeList, from: number, to: number): void {
    if (from >= to) return;
    const start = other.startOf(from);
    const end = other.ends[to - 1]!;
    this.#reserve(end - start);
    other.bytes.copy(this.bytes, this.length, start, end);
    const shift = this.length - start;
    for (let i = from; i < to; i++) {
      this.#record(other.ends[i]! + shift, other.keyAt[i]! + shift, other.keyLength[i]!, other.sequences[i]!);
    }
  }

  /** Forgets the first `n` changes (moving the others to the front). */
  dropFirst(n: number): void {
    if (n >= this.count) {
      this.reset();
      return;
    }
    if (n <= 0) return;
    const cut = this.ends[n - 1]!;
    this.bytes.copy(this.bytes, 0, cut, this.length);
    this.length -= cut;
    const rest = this.count - n;
    this.ends.copyWithin(0, n, this.count);
    this.keyAt.copyWithin(0, n, this.count);
    this.keyLength.copyWithin(0, n, this.count);
    this.sequences.copyWithin(0, n, this.count);
    for (let i = 0; i < rest; i++) {
      this.ends[i]! -= cut;
      this.keyAt[i]! -= cut;
    }
    this.count = rest;
  }

  /** Empties the list; a buffer (and arrays) that grew past what the list keeps is let go. */
  reset(): void {
    this.length = 0;
    this.count = 0;
    if (this.bytes.length > this.#keepBytes) {
      this.bytes = Buffer.allocUnsafeSlow(this.#firstBytes);
      this.ends = new Int32Array(this.#firstChanges);
      this.keyAt = new Int32Array(this.#firstChanges);
      this.keyLength = new Int32Array(this.#firstChanges);
      this.sequences = new Float64Array(this.#firstChanges);
    }
  }

  #record(end: number, keyAt: number, keyLength: number, sequence: number): void {
    if (this.count === this.ends.length) {
      const n = this.count * 2;
      this.ends = grow(this.ends, new Int32Array(n));
      this.keyAt = grow(this.keyAt, new Int32Array(n));
      this.keyLength = grow(this.keyLength, new Int32Array(n));
      this.sequences = grow(this.sequences, new Float64Array(n));
    }
    const i = this.count++;
    this.ends[i] = end;
    this.keyAt[i] = keyAt;
    this.keyLength[i] = keyLength;
    this.sequences[i] = sequence;
    this.length = end;
  }

  #reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.length + n, this.bytes.length * 2));
    this.bytes.copy(next, 0, 0, this.length);
    this.bytes = next;
  }
}

function grow<T extends Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/**
 * Writes a msgpack str or bin header for `n` bytes at `p`: a fix form (`fix | n`, below `fixLimit`; none when `fix`
 * is -1), else `first` (8-bit length), `first + 1` (16-bit), `first + 2` (32-bit). Returns the position after it.
 */
function writeHeader(b: Buffer, p: number, n: number, fix: number, fixLimit: number, first: number): number {
  if (fix >= 0 && n < fixLimit) {
    b[p] = fix | n;
    return p + 1;
  }
  if (n < 0x100) {
    b[p] = first;
    b[p + 1] = n;
    return p + 2;
  }
  if (n < 0x10000) {
    b[p] = first + 1;
    b.writeUInt16BE(n, p + 1);
    return p + 3;
  }
  b[p] = first + 2;
  b.writeUInt32BE(n, p + 1);
  return p + 5;
}

/** One change read back from its encoding (the SSE watch turns it into JSON). */
export interface DecodedChange {
  sequence: number;
  /** The key's UTF-8 bytes (a view). */
  key: Uint8Array;
  /** The value's bytes (a view), or null for a delete. */
  value: Uint8Array | null;
  /** Where the change's encoding ends. */
  end: number;
}

/**
 * Reads the change whose encoding starts at `at` of `b` (as `append` wrote it, no other msgpack) into `out`; throws
 * a RangeError on bytes that are not one.
 */
export function readChange(b: Uint8Array, at: number, out: DecodedChange): DecodedChange {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let p = at;
  if (b[p++] !== 0x93) throw new RangeError(`no change at ${at}`);
  const s = b[p++];
  if (s === 0xce) {
    out.sequence = view.getUint32(p);
    p += 4;
  } else if (s === 0xcb) {
    out.sequence = view.getFloat64(p);
    p += 8;
  } else throw new RangeError(`no sequence at ${at + 1}`);
  const k = b[p++]!;
  let n: number;
  if ((k & 0xe0) === 0xa0) n = k & 0x1f;
  else {
    const width = lengthWidth(k, 0xd9, p - 1, 'key');
    n = readLength(view, p, width);
    p += width;
  }
  out.key = b.subarray(p, p + n);
  p += n;
  const v = b[p++]!;
  if (v === 0xc0) out.value = null;
  else {
    const width = lengthWidth(v, 0xc4, p - 1, 'value');
    n = readLength(view, p, width);
    p += width;
    out.value = b.subarray(p, p + n);
    p += n;
  }
  if (p > b.length) throw new RangeError(`a change at ${at} runs past the end`);
  out.end = p;
  return out;
}

/** The width of the length after header byte `h` of the 8-, 16- and 32-bit forms from `first` (as writeHeader). */
function lengthWidth(h: number, first: number, at: number, what: string): number {
  const i = h - first;
  if (i < 0 || i > 2) throw new RangeError(`no ${what} at ${at}`);
  return 1 << i;
}

function readLength(view: DataView, p: number, width: number): number {
  return width === 1 ? view.getUint8(p) : width === 2 ? view.getUint16(p) : view.getUint32(p);
}
