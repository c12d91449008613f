import { fstatSync, readSync } from 'node:fs';
import type { ArenaState } from '../memory/arena.js';
import { SLOT_BYTES } from '../memory/hash-table.js';
import { SIZE_CLASS_COUNT } from '../memory/size-class.js';
import { imageChecksum, portableImageChecksum } from './native.js';

/**
 * The map image: a persisted map's own memory (index table and arena segments, byte for byte) written at a clean
 * close, so that the next open holds the map again in about the time it takes to read the file, instead of
 * rebuilding it record by record from the engine. The engine stays the truth: an image is used only if it was
 * written when the engine held exactly what it holds now (the same image id under the engine's `image` key and the
 * same last sequence number) and every checksum matches; otherwise it is ignored and the map is rebuilt by a scan.
 *
 * File `MAPIMAGE` in the map's directory; all integers little-endian. Sections start at multiples of 64 KiB (so
 * each could be memory-mapped on its own, with any page size up to 64 KiB).
 *
 *   +0     8  magic "HLMAPIMG"
 *   +8     4  header checksum: image checksum of bytes [12, header length)
 *   +12    4  format version (2; a format-1 image, of 8-byte record headers, is not loaded)
 *   +16    4  header length
 *   +20   16  image id (the engine's `image` key holds the same 16 bytes)
 *   +36    4  section count: 1 + arena segments
 *   +40    8  engine last sequence number when written (f64)
 *   +48    8  entries (f64)
 *   +56    8  payload bytes (f64)
 *   +64    4  table capacity      +68  4  table live slots      +72  4  table tombstones
 *   +76    4  current segment (0xffffffff: none)                 +80  4  bytes used in it
 *   +88    8  arena live bytes (f64)    +96  8  free bytes (f64)   +104  8  waste bytes (f64)
 *   +112   4  length M of the metadata blob      +116  4  reserved, zero
 *   +120 960  free-list heads, one u32 per size class
 *   +1080     section table, 24 bytes each: file offset (f64), bytes in the file (u32), bytes in memory (u32),
 *             image checksum of the bytes in the file (u32), reserved (u32). Section 0 is the index table,
 *             section 1 + i is arena segment i. Memory beyond the file bytes (the current segment's tail) is zero.
 *   then       M bytes of metadata: what the engine's meta keys held when the image was written (msgpack, written
 *             and read by the map), so that an open that finds the image current reads them from here
 *
 * The image checksum of a byte range is the CRC32C of each 64 KiB chunk, then the CRC32C of those CRCs (native.ts).
 */
const MAGIC = 'HLMAPIMG';
const VERSION = 2;
/** Bytes of the header before the section table. */
export const FIXED_BYTES = 1080;
const SECTION_BYTES = 24;
/** Section alignment in the file: a multiple of every page size Linux uses on x86-64 and arm64, and of the checksum chunk. */
const IMAGE_ALIGN = 64 * 1024;
const NO_SEGMENT = 0xffffffff;
/** More segments than an arena can have (2048) means a damaged header. */
const MAX_SECTIONS = 1 + 2048;

/** What a map image holds. */
export interface ImageContent {
  id: Uint8Array;
  sequence: number;
  entries: number;
  payload: number;
  table: SharedArrayBuffer;
  capacity: number;
  live: number;
  tombstones: number;
  segments: SharedArrayBuffer[];
  arena: ArenaState;
  /** The map's metadata as of the image (opaque here). */
  meta: Uint8Array;
}

/** A section to write: its buffer, of which the first `fileBytes` go to the file. */
export interface SectionSource {
  readonly buf: SharedArrayBuffer;
  readonly fileBytes: number;
}

/**
 * The header of an image of `content` whose sections (the index table, then each arena segment) are `sections`,
 * checksummed, and the file offset of each section.
 */
export function encodeHeader(
  content: ImageContent,
  sections: readonly SectionSource[],
): { header: Buffer; offsets: number[] } {
  const tableEnd = FIXED_BYTES + sections.length * SECTION_BYTES;
  const headerBytes = tableEnd + content.meta.length;
  const header = Buffer.alloc(headerBytes);
  header.set(content.meta, tableEnd);
  header.writeUInt32LE(content.meta.length, 112);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32LE(VERSION, 12);
  header.writeUInt32LE(headerBytes, 16);
  header.set(content.id, 20);
  header.writeUInt32LE(sections.length, 36);
  header.writeDoubleLE(content.sequence, 40);
  header.writeDoubleLE(content.entries, 48);
  header.writeDoubleLE(content.payload, 56);
  header.writeUInt32LE(content.capacity, 64);
  header.writeUInt32LE(content.live, 68);
  header.writeUInt32LE(content.tombstones, 72);
  const a = content.arena;
  header.writeUInt32LE(a.current < 0 ? NO_SEGMENT : a.current, 76);
  header.writeUInt32LE(a.used, 80);
  header.writeDoubleLE(a.liveBytes, 88);
  header.writeDoubleLE(a.freeBytes, 96);
  header.writeDoubleLE(a.wasteBytes, 104);
  for (let c = 0; c < SIZE_CLASS_COUNT; c++) header.writeUInt32LE(a.freeHeads[c]!, 120 + c * 4);
  let offset = align(headerBytes);
  const offsets = sections.map((s, i) => {
    const bytes = new Uint8Array(s.buf, 0, s.fileBytes);
    const at = FIXED_BYTES + i * SECTION_BYTES;
    header.writeDoubleLE(offset, at);
    header.writeUInt32LE(s.fileBytes, at + 8);
    header.writeUInt32LE(s.buf.byteLength, at + 12);
    header.writeUInt32LE(imageChecksum(bytes), at + 16);
    const at0 = offset;
    offset += align(s.fileBytes);
    return at0;
  });
  header.writeUInt32LE(imageChecksum(header.subarray(12)), 8);

  return { header, offsets };
}

/** A section of the image: where its bytes are in the file, its size in memory, its checksum. */
export interface Section {
  offset: number;
  fileBytes: number;
  bytes: number;
  checksum: number;
}

/** An image's header, checked. */
export interface Header {
  /** The header's bytes as in the file. */
  bytes: Buffer;
  meta: Uint8Array;
  id: Uint8Array;
  sequence: number;
  entries: number;
  payload: number;
  capacity: number;
  live: number;
  tombstones: number;
  arena: ArenaState;
  sections: Section[];
}

/** The header of the image open as `fd`, read and checked, or why it is not an image's. */
export function readHeader(fd: number): Header | string {
  const fileBytes = fstatSync(fd).size;
  const fixed = Buffer.alloc(FIXED_BYTES);
  if (readFully(fd, fixed, 0) < FIXED_BYTES) return 'image truncated (header)';
  const headerBytes = headerLength(fixed, fileBytes);
  if (typeof headerBytes === 'string') return headerBytes;
  const header = Buffer.alloc(headerBytes);
  header.set(fixed);
  if (readFully(fd, header.subarray(FIXED_BYTES), FIXED_BYTES) < headerBytes - FIXED_BYTES) {
    return 'image truncated (section table)';
  }
  return parseHeader(header, fileBytes);
}

/**
 * The whole header's length from its first {@link FIXED_BYTES} bytes (`fixed`), or why they are not the start of
 * an image of `fileBytes` bytes.
 */
export function headerLength(fixed: Buffer, fileBytes: number): number | string {
  if (fixed.toString('latin1', 0, 8) !== MAGIC) return 'not a map image (bad magic)';
  if (fixed.readUInt32LE(12) !== VERSION) return `image format ${fixed.readUInt32LE(12)} is not ${VERSION}`;
  const headerBytes = fixed.readUInt32LE(16);
  const count = fixed.readUInt32LE(36);
  const metaBytes = fixed.readUInt32LE(112);
  if (
    count < 1 ||
    count > MAX_SECTIONS ||
    headerBytes !== FIXED_BYTES + count * SECTION_BYTES + metaBytes ||
    headerBytes > fileBytes
  ) {
    return 'image header damaged (section count or length)';
  }
  return headerBytes;
}

/** The header of an image of `fileBytes` bytes from its bytes (of the length {@link headerLength} gave), checked. */
export function parseHeader(header: Buffer, fileBytes: number): Header | string {
  const count = header.readUInt32LE(36);
  if (portableImageChecksum(header.subarray(12)) !== header.readUInt32LE(8)) return 'image header checksum mismatch';
  const current = header.readUInt32LE(76);
  const freeHeads = new Uint32Array(SIZE_CLASS_COUNT);
  for (let c = 0; c < SIZE_CLASS_COUNT; c++) freeHeads[c] = header.readUInt32LE(120 + c * 4);
  const sections: Section[] = [];
  for (let i = 0; i < count; i++) {
    const at = FIXED_BYTES + i * SECTION_BYTES;
    const s = {
      offset: header.readDoubleLE(at),
      fileBytes: header.readUInt32LE(at + 8),
      bytes: header.readUInt32LE(at + 12),
      checksum: header.readUInt32LE(at + 16),
    };
    if (
      !Number.isSafeInteger(s.offset) ||
      s.offset % IMAGE_ALIGN !== 0 ||
      s.bytes === 0 ||
      s.fileBytes > s.bytes ||
      s.offset + s.fileBytes > fileBytes
    ) {
      return `image truncated or damaged (section ${i})`;
    }
    sections.push(s);
  }
  const capacity = header.readUInt32LE(64);
  const live = header.readUInt32LE(68);
  const tombstones = header.readUInt32LE(72);
  const used = header.readUInt32LE(80);
  if (
    capacity < 16 ||
    (capacity & (capacity - 1)) !== 0 ||
    live + tombstones > capacity ||
    sections[0]!.bytes !== capacity * SLOT_BYTES ||
    sections[0]!.fileBytes !== sections[0]!.bytes ||
    (current === NO_SEGMENT ? count !== 1 : current + 2 !== count || used > sections[count - 1]!.bytes)
  ) {
    return 'image header damaged (table or arena state)';
  }
  return {
    bytes: header,
    meta: header.subarray(FIXED_BYTES + count * SECTION_BYTES),
    id: header.subarray(20, 36),
    sequence: header.readDoubleLE(40),
    entries: header.readDoubleLE(48),
    payload: header.readDoubleLE(56),
    capacity,
    live,
    tombstones,
    arena: {
      current: current === NO_SEGMENT ? -1 : current,
      used,
      liveBytes: header.readDoubleLE(88),
      freeBytes: header.readDoubleLE(96),
      wasteBytes: header.readDoubleLE(104),
      freeHeads,
    },
    sections,
  };
}

function align(n: number): number {
  return Math.ceil(n / IMAGE_ALIGN) * IMAGE_ALIGN;
}

/** Reads into `into` from `position` until it is full or the file ends; returns the bytes read. */
export function readFully(fd: number, into: Uint8Array, position: number): number {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}
