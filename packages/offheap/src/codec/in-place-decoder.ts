/**
 * The structures msgpackr shares across values: one array of field names per structure id. An object written
 * against one is its structure id, then its field values in the structure's order (msgpackr calls such an object a
 * record; here it is a structured object, "record" being the arena's word).
 */
export type Structures = string[][];

/** What `InPlaceDecoder.decode` returns when the bytes are not of the subset it reads (msgpackr decodes them). */
export const MISS: unique symbol = Symbol('heapless.offheap.miss');

/** Structure ids this decoder reads: one-byte ids `0x40 + id` (msgpackr's default of at most 32 shared structures). */
const ONE_BYTE_IDS = 32;
const fromCharCode = String.fromCharCode;

type ObjectReader = (d: InPlaceDecoder) => unknown;

/**
 * The owner's fast path for the common shape of a stored value: a structured object (a shared structure's id, then
 * its field values) whose fields are small ints, floats (f64), booleans, null, ASCII strings, arrays of those, or
 * nested structured objects.
 * It reads the arena segment in place (the owner is the only writer, so no copy is needed), with no module state,
 * one generated object literal per structure (as msgpackr's own reader of structured objects builds, so the objects have the same
 * keys in the same order), and strings built in JS.
 *
 * Anything else — maps, binary, extensions, int64, float32, non-ASCII strings, two-byte structure ids, unknown
 * structures, bytes that do not end exactly at `end` — returns MISS and the caller decodes with msgpackr, which
 * owns every other case and every error message. So a value decodes to what msgpackr would give, or MISS.
 */
export class InPlaceDecoder {
  /** Next byte to read. */
  pos = 0;
  private end = 0;
  private miss = false;
  private u8: Uint8Array = new Uint8Array(0);
  private dv: DataView = new DataView(new ArrayBuffer(0));
  private structures: Structures = [];
  /** Per structure id: the structure a reader was generated for, and the reader (null: not readable here). */
  private readonly readerOf: (string[] | undefined)[] = [];
  private readonly readers: (ObjectReader | null)[] = [];

  /** Decodes `u8[start, end)` (`dv` views the same memory), or returns MISS. */
  decode(u8: Uint8Array, dv: DataView, start: number, end: number, structures: Structures): unknown {
    const t = u8[start]!;
    // Only structured objects of a known one-byte structure id; everything else goes to msgpackr straight away.
    if (t < 0x40 || t >= 0x40 + ONE_BYTE_IDS || start >= end) return MISS;
    this.u8 = u8;
    this.dv = dv;
    this.pos = start;
    this.end = end;
    this.miss = false;
    this.structures = structures;
    const value = this.v();
    return this.miss || this.pos !== end ? MISS : value;
  }

  /** Reads one value; on anything outside the subset sets `miss` (the caller then discards what was read). */
  v(): unknown {
    let p = this.pos;
    if (p >= this.end) return this.fail();
    const b = this.u8;
    const t = b[p++]!;
    this.pos = p;
    if (t < 0x40) return t;
    if (t < 0x80) return t < 0x40 + ONE_BYTE_IDS ? this.structured(t - 0x40) : this.fail();
    if (t < 0x90) return this.fail(); // fixmap
    if (t < 0xa0) return this.array(t - 0x90);
    if (t < 0xc0) return this.string(t - 0xa0);
    if (t >= 0xe0) return t - 0x100;
    const dv = this.dv;
    switch (t) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xcb:
        if (!this.take(8)) return this.fail();
        return dv.getFloat64(p);
      case 0xcc:
        if (!this.take(1)) return this.fail();
        return b[p]!;
      case 0xcd:
        if (!this.take(2)) return this.fail();
        return dv.getUint16(p);
      case 0xce:
        if (!this.take(4)) return this.fail();
        return dv.getUint32(p);
      case 0xd0:
        if (!this.take(1)) return this.fail();
        return dv.getInt8(p);
      case 0xd1:
        if (!this.take(2)) return this.fail();
        return dv.getInt16(p);
      case 0xd2:
        if (!this.take(4)) return this.fail();
        return dv.getInt32(p);
      case 0xd9:
        if (!this.take(1)) return this.fail();
        return this.string(b[p]!);
      case 0xdc:
        if (!this.take(2)) return this.fail();
        return this.array(dv.getUint16(p));
      default:
        return this.fail();
    }
  }

  /** Advances past `n` bytes if they are there. */
  private take(n: number): boolean {
    if (this.pos + n > this.end) return false;
    this.pos += n;
    return true;
  }

  private fail(): undefined {
    this.miss = true;
    this.pos = this.end + 1; // every later read fails fast
    return undefined;
  }

  private array(n: number): unknown {
    if (n > this.end - this.pos) return this.fail(); // each element is at least one byte
    const a = new Array(n);
    for (let i = 0; i < n; i++) a[i] = this.v();
    return a;
  }

  private structured(id: number): unknown {
    // msgpackr cuts the table to its shared length before each decode (later entries are a previous value's inline
    // definitions), so only shared ids are read here.
    const structures = this.structures;
    if (id >= ((structures as { sharedLength?: number }).sharedLength || 0)) return this.fail();
    const structure = structures[id];
    if (structure === undefined) return this.fail();
    let read = this.readers[id];
    if (read === undefined || this.readerOf[id] !== structure) {
      read = readerFor(structure);
      this.readers[id] = read;
      this.readerOf[id] = structure;
    }
    return read === null ? this.fail() : read(this);
  }

  /** An ASCII string of `n` bytes at `pos` (non-ASCII: MISS, msgpackr's UTF-8 decoding is the reference). */
  private string(n: number): unknown {
    const p = this.pos;
    if (p + n > this.end) return this.fail();
    const b = this.u8;
    let or = 0;
    for (let i = p; i < p + n; i++) or |= b[i]!;
    if (or >= 0x80) return this.fail();
    this.pos = p + n;
    return n <= 16 ? shortAscii(b, p, n) : latin1(b, p, n);
  }
}

/** A reader building one object literal with the structure's keys in order; null for keys it cannot write literally. */
function readerFor(structure: readonly string[]): ObjectReader | null {
  const highByte = (structure as { highByte?: number }).highByte;
  if (typeof highByte === 'number' && highByte >= 0) return null; // two-byte ids
  const parts: string[] = [];
  for (const key of structure) {
    // A quoted "__proto__" in a literal sets the prototype; msgpackr renames it. Leave such values to msgpackr.
    if (typeof key !== 'string' || key === '__proto__') return null;
    parts.push(`${JSON.stringify(key)}: d.v()`);
  }
  return new Function('d', `return { ${parts.join(', ')} };`) as ObjectReader;
}

/** ASCII bytes as a flat string (one fromCharCode call: no cons-string from concatenation). */
function shortAscii(b: Uint8Array, p: number, n: number): string {
  switch (n) {
    case 0:
      return '';
    case 1:
      return fromCharCode(b[p]!);
    case 2:
      return fromCharCode(b[p]!, b[p + 1]!);
    case 3:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!);
    case 4:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!);
    case 5:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!);
    case 6:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!);
    case 7:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!, b[p + 6]!);
    case 8:
      return fromCharCode(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!, b[p + 6]!, b[p + 7]!);
    default: {
      // 9..16: the same call spelled with as many arguments as bytes
      const a = b[p]!;
      const c = b[p + 1]!;
      const d = b[p + 2]!;
      const e = b[p + 3]!;
      const f = b[p + 4]!;
      const g = b[p + 5]!;
      const h = b[p + 6]!;
      const i = b[p + 7]!;
      const j = b[p + 8]!;
      switch (n) {
        case 9:
          return fromCharCode(a, c, d, e, f, g, h, i, j);
        case 10:
          return fromCharCode(a, c, d, e, f, g, h, i, j, b[p + 9]!);
        case 11:
          return fromCharCode(a, c, d, e, f, g, h, i, j, b[p + 9]!, b[p + 10]!);
        case 12:
          return fromCharCode(a, c, d, e, f, g, h, i, j, b[p + 9]!, b[p + 10]!, b[p + 11]!);
        case 13:
          return fromCharCode(a, c, d, e, f, g, h, i, j, b[p + 9]!, b[p + 10]!, b[p + 11]!, b[p + 12]!);
        case 14:
          return fromCharCode(a, c, d, e, f, g, h, i, j, b[p + 9]!, b[p + 10]!, b[p + 11]!, b[p + 12]!, b[p + 13]!);
        case 15:
          return fromCharCode(
            a,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            b[p + 9]!,
            b[p + 10]!,
            b[p + 11]!,
            b[p + 12]!,
            b[p + 13]!,
            b[p + 14]!,
          );
        default:
          return fromCharCode(
            a,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            b[p + 9]!,
            b[p + 10]!,
            b[p + 11]!,
            b[p + 12]!,
            b[p + 13]!,
            b[p + 14]!,
            b[p + 15]!,
          );
      }
    }
  }
}

const latin1Slice = Buffer.prototype.latin1Slice as (this: Uint8Array, start: number, end: number) => string;

/** Longer ASCII strings: one native call over the segment (works on SharedArrayBuffer memory). */
function latin1(b: Uint8Array, p: number, n: number): string {
  return latin1Slice.call(b, p, p + n);
}
