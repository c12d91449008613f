import { OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { SIZE_CLASS_COUNT, sizeClassFloor, sizeClassOf, sizeClassUnits } from './size-class.js';

/**
 * The arena: records (key and value bytes) in a list of SharedArrayBuffer segments, allocated by size class with a
 * free list per class, so space freed by deletes and overwrites is reused by later records of the same class.
 *
 * Location (the u32 a hash slot points with):
 *
 *   bits 31..21  segment index (11 bits: up to 2048 segments)
 *   bits 20..0   offset in the segment in 8-byte units (21 bits: segments up to 16 MiB)
 *
 * Locations 0 and 1 would name the first 16 bytes of segment 0, which are never allocated, so the index can use
 * them as "empty" and "deleted". Segments start at 256 KiB and double up to 16 MiB so small maps stay small.
 *
 * Record (8-byte aligned, size rounded up to its class):
 *
 *   +0  u32  value length in bytes
 *   +4  u16  key length in bytes
 *   +6  u8   size class of the block (see size-class.ts)
 *   +7  u8   flags: bit 0 = live (0 once freed), bit 1 = has an expiry
 *   +8  f64  version (an integer below 2^53: an engine sequence, a stream position or the map's own counter)
 *   +16      key bytes, then value bytes
 *   +align8(16 + key + value)  f64  expiresAt, ms since the epoch, only with flag bit 1
 *
 * The key sits at a fixed offset so that a probe compares it without reading the flags; the expiry after the value
 * costs only the records that have one.
 *
 * A free block keeps its class at +6, flags 0, and the location of the next free block of its class at +0.
 * All multi-byte fields are little-endian (typed arrays on x86/ARM little-endian hosts; checked at load).
 *
 * This file is the one place that names the layout: code elsewhere reads a location with `locSegment`/`locOffset`
 * and a header with `Arena#keyLength`/`valueLength` or the `*_AT` offsets, never with literals.
 */

/** Bits of a location that hold the offset (in 8-byte units); the bits above them hold the segment index. */
export const LOC_OFFSET_BITS = 21;
export const LOC_OFFSET_MASK = (1 << LOC_OFFSET_BITS) - 1;
export const MAX_SEGMENTS = 1 << (32 - LOC_OFFSET_BITS);
/** Largest segment and so largest block: the 21 offset bits count 8-byte units. */
export const MAX_SEGMENT_BYTES = 1 << 24;
/** The largest record (header + key + value) an arena can hold. */
export const MAX_RECORD_BYTES = MAX_SEGMENT_BYTES;
/** Index slot location meaning "never used". */
export const LOC_EMPTY = 0;
/** Index slot location meaning "deleted" (a tombstone: probes continue past it). */
export const LOC_TOMBSTONE = 1;

/** Record header fields, as byte offsets from the record's start (the table above). */
export const VALUE_LENGTH_AT = 0;
export const KEY_LENGTH_AT = 4;
export const SIZE_CLASS_AT = 6;
export const FLAGS_AT = 7;
export const VERSION_AT = 8;
/** Header bytes: the key starts here, the value right after the key. */
export const RECORD_HEADER_BYTES = 16;
/** Flags bit: the block holds a record (0 once freed). */
export const FLAG_LIVE = 1;
/** Flags bit: an expiresAt (f64) follows the value, at `expiryOffset`. */
export const FLAG_EXPIRES = 2;
/** `expiresAt` of a record without an expiry, as the map's API reports it. */
export const NO_EXPIRY = 0;

const FIRST_SEGMENT_BYTES = 1 << 18;
const RESERVED_PREFIX_BYTES = 16;

if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) throw new Error('@heapless/offheap needs a little-endian host');

/** The segment index of a location. */
export function locSegment(loc: number): number {
  return loc >>> LOC_OFFSET_BITS;
}

/** The byte offset in its segment of the block a location names. */
export function locOffset(loc: number): number {
  return (loc & LOC_OFFSET_MASK) * 8;
}

/**
 * The key length of the record at byte `off`, from the segment's int32 view: the probe's one read of a header
 * (the u16 at KEY_LENGTH_AT = 4 is the low half of the record's second int32 word on a little-endian host).
 */
export function keyLengthIn(i32: Int32Array, off: number): number {
  return i32[(off + KEY_LENGTH_AT) >>> 2]! & 0xffff;
}

/** The location of the block at byte offset `off` (a multiple of 8) of segment `seg`. */
export function locationOf(seg: number, off: number): number {
  return (seg << LOC_OFFSET_BITS) | (off >>> 3);
}

/**
 * Bytes a record of this key and value length occupies before class rounding; with `expires`, those of the padding
 * to 8 bytes and of the expiresAt after the value too.
 */
export function recordBytes(keyLength: number, valueLength: number, expires = false): number {
  const n = RECORD_HEADER_BYTES + keyLength + valueLength;
  return expires ? ((n + 7) & ~7) + 8 : n;
}

/** Byte offset of the expiresAt of the record at byte `off` whose key and value have these lengths. */
export function expiryOffset(off: number, keyLength: number, valueLength: number): number {
  return off + ((RECORD_HEADER_BYTES + keyLength + valueLength + 7) & ~7);
}

/** What, besides the segments' bytes, an arena needs to go on allocating where it stopped (see persist/image.ts). */
export interface ArenaState {
  /** Segment bump allocation goes on in (-1: none yet), and its bytes handed out so far. */
  current: number;
  used: number;
  liveBytes: number;
  freeBytes: number;
  wasteBytes: number;
  /** Location of the first free block of each size class (0: none). */
  freeHeads: Uint32Array;
}

export class Arena {
  /** The segments' memory, in location order; shared with readers. */
  readonly buffers: SharedArrayBuffer[] = [];
  /** Byte, u16 and u32 views of each segment (Buffers, so msgpackr can decode strings straight from them). */
  readonly u8: Buffer[] = [];
  readonly u16: Uint16Array[] = [];
  readonly u32: Uint32Array[] = [];
  /** Int32 views: what the probe compares key words with, and what `get` copies a record with. */
  readonly i32: Int32Array[] = [];
  readonly dv: DataView[] = [];
  /** Float64 views: the version and the expiresAt of a record (both 8-byte aligned). */
  readonly f64: Float64Array[] = [];
  /** Bytes of all segments. */
  reservedBytes = 0;
  /** Bytes of blocks holding live records (class-rounded). */
  liveBytes = 0;
  /** Bytes of blocks on the free lists. */
  freeBytes = 0;
  /** Bytes that are neither: segment tails too small for any class, and the reserved prefix. */
  wasteBytes = 0;
  private readonly freeHeads = new Uint32Array(SIZE_CLASS_COUNT);
  private current = -1;
  private used = 0;
  private size = 0;

  /** Bytes handed out from segments so far (live + free + waste). */
  get usedBytes(): number {
    return this.liveBytes + this.freeBytes + this.wasteBytes;
  }

  /**
   * A block for a record of `bytes` bytes (header included). Writes the block's class and clears the flags; the
   * caller writes the rest of the header. Throws VALUE_TOO_LARGE above MAX_RECORD_BYTES.
   */
  alloc(bytes: number): number {
    if (bytes > MAX_RECORD_BYTES) {
      throw new OffHeapError(
        OffHeapErrorCodes.VALUE_TOO_LARGE,
        `record of ${bytes} bytes exceeds the ${MAX_RECORD_BYTES}-byte arena block limit`,
      );
    }
    const c = sizeClassOf((bytes + 7) >>> 3);
    const blockBytes = sizeClassUnits(c) * 8;
    let loc = this.freeHeads[c]!;
    if (loc !== 0) {
      this.freeHeads[c] = this.nextFree(locSegment(loc), locOffset(loc));
      this.freeBytes -= blockBytes;
    } else {
      if (this.used + blockBytes > this.size) this.addSegment(blockBytes);
      loc = locationOf(this.current, this.used);
      this.used += blockBytes;
    }
    this.liveBytes += blockBytes;
    const u8 = this.u8[locSegment(loc)]!;
    const off = locOffset(loc);
    u8[off + SIZE_CLASS_AT] = c;
    u8[off + FLAGS_AT] = 0;
    return loc;
  }

  /** Returns the block at `loc` to its class's free list. */
  free(loc: number): void {
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const c = this.sizeClass(seg, off);
    const blockBytes = sizeClassUnits(c) * 8;
    this.liveBytes -= blockBytes;
    this.pushFree(seg, off, c);
  }

  /** Bytes of the block at `loc` (its class size). */
  blockBytes(loc: number): number {
    return sizeClassUnits(this.sizeClass(locSegment(loc), locOffset(loc))) * 8;
  }

  /** Key length of the record at byte `off` of segment `seg`. */
  keyLength(seg: number, off: number): number {
    return this.u16[seg]![(off + KEY_LENGTH_AT) >>> 1]!;
  }

  /**
   * Value length of the record at byte `off` of segment `seg`. Read through the int32 view: a length is below 2^24,
   * and an int32 stays a small integer in V8 where a uint32 load may not.
   */
  valueLength(seg: number, off: number): number {
    return this.i32[seg]![(off + VALUE_LENGTH_AT) >>> 2]!;
  }

  /** The location of the next free block of its class, held by the free block at byte `off` of segment `seg`. */
  private nextFree(seg: number, off: number): number {
    return this.u32[seg]![(off + VALUE_LENGTH_AT) >>> 2]!;
  }

  /** Size class of the block at byte `off` of segment `seg`. */
  sizeClass(seg: number, off: number): number {
    return this.u8[seg]![off + SIZE_CLASS_AT]!;
  }

  /** Sets the value length of the record at byte `off` of segment `seg` (a value rewritten in place). */
  setValueLength(seg: number, off: number, valueLength: number): void {
    this.u32[seg]![(off + VALUE_LENGTH_AT) >>> 2] = valueLength;
  }

  /**
   * Writes the header of a new record into the block `alloc` returned at byte `off` of segment `seg` (the block's
   * class is already there), and its expiry (`expiresAt`, NO_EXPIRY for none) after where the value goes; the
   * caller writes the key and value.
   */
  writeHeader(
    seg: number,
    off: number,
    keyLength: number,
    valueLength: number,
    version: number,
    expiresAt: number,
  ): void {
    this.u32[seg]![(off + VALUE_LENGTH_AT) >>> 2] = valueLength;
    this.u16[seg]![(off + KEY_LENGTH_AT) >>> 1] = keyLength;
    this.f64[seg]![(off + VERSION_AT) >>> 3] = version;
    this.setExpiry(seg, off, keyLength, valueLength, expiresAt);
  }

  /**
   * Sets the flags (live, and whether it expires) and the expiry of the record at byte `off` of segment `seg`, whose
   * block must have room for it (`recordBytes(..., true)`) when `expiresAt` is not NO_EXPIRY.
   */
  setExpiry(seg: number, off: number, keyLength: number, valueLength: number, expiresAt: number): void {
    if (expiresAt === NO_EXPIRY) {
      this.u8[seg]![off + FLAGS_AT] = FLAG_LIVE;
      return;
    }
    this.f64[seg]![expiryOffset(off, keyLength, valueLength) >>> 3] = expiresAt;
    this.u8[seg]![off + FLAGS_AT] = FLAG_LIVE | FLAG_EXPIRES;
  }

  /** The version of the record at byte `off` of segment `seg`. */
  version(seg: number, off: number): number {
    return this.f64[seg]![(off + VERSION_AT) >>> 3]!;
  }

  /** Sets the version of the record at byte `off` of segment `seg` (a value rewritten in place). */
  setVersion(seg: number, off: number, version: number): void {
    this.f64[seg]![(off + VERSION_AT) >>> 3] = version;
  }

  /** The expiresAt of the record at byte `off` of segment `seg`, or NO_EXPIRY. */
  expiresAt(seg: number, off: number): number {
    if ((this.u8[seg]![off + FLAGS_AT]! & FLAG_EXPIRES) === 0) return NO_EXPIRY;
    return this.f64[seg]![expiryOffset(off, this.keyLength(seg, off), this.valueLength(seg, off)) >>> 3]!;
  }

  /** True if the record at byte `off` of segment `seg` has an expiry at or before `now`. */
  expired(seg: number, off: number, now: number): boolean {
    if ((this.u8[seg]![off + FLAGS_AT]! & FLAG_EXPIRES) === 0) return false;
    return this.f64[seg]![expiryOffset(off, this.keyLength(seg, off), this.valueLength(seg, off)) >>> 3]! <= now;
  }

  /** One line per segment and the non-empty free lists, for tests and debugging. */
  dump(): string {
    const lines = [
      `arena reserved=${this.reservedBytes} live=${this.liveBytes} free=${this.freeBytes} waste=${this.wasteBytes}`,
    ];
    for (let i = 0; i < this.buffers.length; i++) {
      lines.push(
        `  segment ${i}: ${this.buffers[i]!.byteLength} bytes${i === this.current ? `, used ${this.used}` : ''}`,
      );
    }
    for (let c = 0; c < SIZE_CLASS_COUNT; c++) {
      let n = 0;
      for (let loc = this.freeHeads[c]!; loc !== 0; n++) {
        loc = this.nextFree(locSegment(loc), locOffset(loc));
      }
      if (n > 0) lines.push(`  free class ${c} (${sizeClassUnits(c) * 8} B): ${n}`);
    }
    return lines.join('\n');
  }

  private pushFree(seg: number, off: number, c: number): void {
    const u8 = this.u8[seg]!;
    u8[off + SIZE_CLASS_AT] = c;
    u8[off + FLAGS_AT] = 0;
    this.u16[seg]![(off + KEY_LENGTH_AT) >>> 1] = 0;
    this.u32[seg]![(off + VALUE_LENGTH_AT) >>> 2] = this.freeHeads[c]!;
    this.freeHeads[c] = locationOf(seg, off);
    this.freeBytes += sizeClassUnits(c) * 8;
  }

  private addSegment(minBytes: number): void {
    const index = this.buffers.length;
    if (index >= MAX_SEGMENTS) {
      throw new OffHeapError(OffHeapErrorCodes.VALUE_TOO_LARGE, `arena is full (${MAX_SEGMENTS} segments)`);
    }
    // Recycle the old segment's tail as free blocks of the largest classes that fit, so it is not lost.
    if (this.current >= 0) {
      let tail = (this.size - this.used) >>> 3;
      while (tail > 0) {
        const c = sizeClassFloor(tail);
        this.pushFree(this.current, this.used, c);
        this.used += sizeClassUnits(c) * 8;
        tail -= sizeClassUnits(c);
      }
    }
    let bytes = index === 0 ? FIRST_SEGMENT_BYTES : Math.min(MAX_SEGMENT_BYTES, this.size * 2);
    while (bytes < minBytes + RESERVED_PREFIX_BYTES) bytes *= 2;
    if (bytes > MAX_SEGMENT_BYTES) bytes = MAX_SEGMENT_BYTES;
    this.adopt(new SharedArrayBuffer(bytes));
    this.current = index;
    this.size = bytes;
    this.used = 0;
    if (index === 0) {
      this.used = RESERVED_PREFIX_BYTES;
      this.wasteBytes += RESERVED_PREFIX_BYTES;
    }
    // Only segment 0, with its reserved prefix, can come out too small for a record of nearly the largest size.
    if (this.used + minBytes > this.size) this.addSegment(minBytes);
  }

  /** The allocation state, for a map image; `freeHeads` is a copy. */
  state(): ArenaState {
    return {
      current: this.current,
      used: this.used,
      liveBytes: this.liveBytes,
      freeBytes: this.freeBytes,
      wasteBytes: this.wasteBytes,
      freeHeads: this.freeHeads.slice(),
    };
  }

  /** Bytes of segment `index` that hold blocks (the rest, after the current segment's `used`, is still zero). */
  usedBytesOf(index: number): number {
    return index === this.current ? this.used : this.buffers[index]!.byteLength;
  }

  /**
   * Makes an empty arena the one a map image describes: `segments` in location order (their bytes as they were)
   * and the allocation state. Later allocations go on exactly where the imaged arena stopped.
   */
  restore(segments: SharedArrayBuffer[], state: ArenaState): void {
    if (this.buffers.length !== 0) throw new Error('restore needs an empty arena');
    for (const sab of segments) this.adopt(sab);
    this.current = state.current;
    this.used = state.used;
    this.size = state.current >= 0 ? segments[state.current]!.byteLength : 0;
    this.liveBytes = state.liveBytes;
    this.freeBytes = state.freeBytes;
    this.wasteBytes = state.wasteBytes;
    this.freeHeads.set(state.freeHeads);
  }

  /**
   * Adds a segment and its views: a new one (`addSegment`), an imaged one (`restore`), or the owner's (a reader
   * mirroring the owner's arena, through which no allocation happens).
   */
  adopt(sab: SharedArrayBuffer): void {
    this.buffers.push(sab);
    this.u8.push(Buffer.from(sab));
    this.u16.push(new Uint16Array(sab));
    this.u32.push(new Uint32Array(sab));
    this.i32.push(new Int32Array(sab));
    this.dv.push(new DataView(sab));
    this.f64.push(new Float64Array(sab));
    this.reservedBytes += sab.byteLength;
  }
}
