import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ArenaState } from '../memory/arena.js';
import { SLOT_BYTES } from '../memory/hash-table.js';
import { SIZE_CLASS_COUNT } from '../memory/size-class.js';
import type { VerifiedImage } from './image-check.js';
import { type ImageLoader, imageChecksum, type NativeHelpers, native, portableImageChecksum } from './native.js';

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
 *   +12    4  format version (1)
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
/** The map image's file name in a map's directory (exported as MAP_IMAGE_FILE). */
export const IMAGE_FILE = 'MAPIMAGE';
const MAGIC = 'HLMAPIMG';
const VERSION = 1;
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

/** Where an image is written before it is renamed to IMAGE_FILE: a file of this name is never loaded. */
export const IMAGE_TEMP_FILE = `${IMAGE_FILE}.tmp`;

/**
 * Writes `content` to `dir/MAPIMAGE` (through a temporary file renamed over it, so a reader sees an old image or
 * the new one). Not fsynced: a torn image after a power loss fails its checksums and is ignored. `segmentBytes(i)`
 * is how much of segment i holds blocks. Returns the bytes written.
 */
export function writeImage(dir: string, content: ImageContent, segmentBytes: (index: number) => number): number {
  const tmp = join(dir, IMAGE_TEMP_FILE);
  const written = writeImageFile(tmp, content, segmentBytes);
  renameSync(tmp, join(dir, IMAGE_FILE));
  return written;
}

/**
 * Writes `content` as an image file at `path` (created or truncated; removed again if a write fails), neither
 * fsynced nor renamed: the caller does that (image-schedule.ts fsyncs before it renames). Returns the bytes written.
 */
export function writeImageFile(path: string, content: ImageContent, segmentBytes: (index: number) => number): number {
  const sections: { buf: SharedArrayBuffer; fileBytes: number }[] = [
    { buf: content.table, fileBytes: content.capacity * SLOT_BYTES },
    ...content.segments.map((buf, i) => ({ buf, fileBytes: segmentBytes(i) })),
  ];
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
  const placed = sections.map((s, i) => {
    const bytes = new Uint8Array(s.buf, 0, s.fileBytes);
    const at = FIXED_BYTES + i * SECTION_BYTES;
    header.writeDoubleLE(offset, at);
    header.writeUInt32LE(s.fileBytes, at + 8);
    header.writeUInt32LE(s.buf.byteLength, at + 12);
    header.writeUInt32LE(imageChecksum(bytes), at + 16);
    const p = { bytes, offset };
    offset += align(s.fileBytes);
    return p;
  });
  header.writeUInt32LE(imageChecksum(header.subarray(12)), 8);

  const fd = openSync(path, 'w');
  let written = 0;
  try {
    written += writeFully(fd, header, 0);
    for (const p of placed) written += writeFully(fd, p.bytes, p.offset);
  } catch (err) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw err;
  }
  closeSync(fd);
  return written;
}

/** An image whose header was read and whose sections are being mapped and checksummed; see `beginImageLoad`. */
export interface PendingImage {
  /** The image id and sequence the header claims (checked against the engine by `finish`). */
  readonly id: Uint8Array;
  readonly sequence: number;
  /** The map's metadata as of the image (from the checksummed header; opaque here). */
  readonly meta: Uint8Array;
  /** How the sections are being read. */
  readonly loader: ImageLoader;
  /**
   * Where the sections' checksums are checked: `'open'` by this load, `'stream'` already, as the file was written
   * (the open was given the {@link VerifiedImage} of this very header).
   */
  readonly checked: 'open' | 'stream';
  /**
   * Checks the sections against their checksums and returns the content, or why the image cannot be used. Whether
   * the image is the engine's current state is the caller's to check first (persistence.ts, directoryFromImage).
   * Releases the file and the checksum thread.
   */
  finish(): ImageContent | string;
  /** Releases the file and the checksum thread of an image that will not be used. */
  drop(): void;
}

/**
 * Starts loading `dir/MAPIMAGE`: reads and checks its header, then (with the native helpers) starts reading and
 * checksumming every section on a thread of its own, so the caller can open the engine meanwhile. Returns
 * why there is no usable image instead (missing file, damaged header). Never throws for a bad image. `helpers`: the
 * native helpers to use (null: the plain loader; helpers without `loadSections` also read, checksumming natively).
 * With `verified` (the proof of a check made as the file was written) and a header that is byte for byte the one
 * checked, mapped sections are not read for their checksums: pages not in memory come in when first touched.
 */
export function beginImageLoad(
  dir: string,
  helpers: NativeHelpers | null = native,
  verified?: VerifiedImage,
): PendingImage | string {
  let fd: number;
  try {
    fd = openSync(join(dir, IMAGE_FILE), 'r');
  } catch {
    return 'no image';
  }
  let header: Header | string;
  try {
    header = readHeader(fd);
  } catch (err) {
    header = `image unreadable: ${String(err)}`;
  }
  if (typeof header === 'string') {
    closeSync(fd);
    return header;
  }
  if (helpers?.loadSections == null) return new ReadImage(fd, header, helpers);
  try {
    return new NativeImage(fd, header, helpers, verified?.matches(header.bytes) !== true);
  } catch (err) {
    closeSync(fd);
    return `image could not be loaded: ${String(err)}`;
  }
}

/** A damaged place in a map image: the file, the byte offset of the part that fails its check, and what fails. */
export interface ImageProblem {
  readonly file: string;
  readonly offset: number;
  readonly message: string;
}

/** What {@link verifyMapImage} found. */
export interface ImageVerifyReport {
  /** The image's path. */
  readonly file: string;
  /** Sections (the index table, each arena segment) read and checksummed. */
  readonly checked: number;
  /** Empty when every checksum holds. */
  readonly problems: ImageProblem[];
}

/**
 * Checks every checksum of `dir/MAPIMAGE` (the header's, then each section's), reading the file and changing
 * nothing; undefined when the directory has no image. A damaged header is one problem at offset 0 (the sections
 * cannot be located then); a damaged section is a problem at its offset, and the others are still checked. Whether
 * the image is current for the engine beside it is not checked here: a stale or damaged image is never used (the
 * map is rebuilt from the engine), so a problem here costs open time, never data. Throws IO errors other than a
 * missing file.
 */
export function verifyMapImage(dir: string, helpers: NativeHelpers | null = native): ImageVerifyReport | undefined {
  const file = join(dir, IMAGE_FILE);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    let header: Header | string;
    try {
      header = readHeader(fd);
    } catch (err) {
      header = `image unreadable: ${String(err)}`;
    }
    if (typeof header === 'string') return { file, checked: 0, problems: [{ file, offset: 0, message: header }] };
    const problems: ImageProblem[] = [];
    header.sections.forEach((s, i) => {
      const what = i === 0 ? 'section 0 (index table)' : `section ${i} (arena segment ${i - 1})`;
      const bytes = Buffer.allocUnsafe(s.fileBytes);
      if (readFully(fd, bytes, s.offset) < s.fileBytes)
        problems.push({ file, offset: s.offset, message: `${what} is cut short` });
      else if ((helpers === null ? portableImageChecksum(bytes) : helpers.checksum(bytes)) !== s.checksum)
        problems.push({ file, offset: s.offset, message: `${what}: checksum mismatch` });
    });
    return { file, checked: header.sections.length, problems };
  } finally {
    closeSync(fd);
  }
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

function readHeader(fd: number): Header | string {
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

function contentOf(h: Header, buffers: SharedArrayBuffer[]): ImageContent {
  return {
    id: h.id,
    sequence: h.sequence,
    entries: h.entries,
    payload: h.payload,
    table: buffers[0]!,
    capacity: h.capacity,
    live: h.live,
    tombstones: h.tombstones,
    segments: buffers.slice(1),
    arena: h.arena,
    meta: h.meta,
  };
}

/** An image whose header was read; owns the file's descriptor until `finish`. */
abstract class LoadingImage implements PendingImage {
  readonly id: Uint8Array;
  readonly sequence: number;
  readonly meta: Uint8Array;
  abstract readonly loader: ImageLoader;
  abstract readonly checked: 'open' | 'stream';

  constructor(
    protected readonly fd: number,
    protected readonly header: Header,
  ) {
    this.id = header.id;
    this.sequence = header.sequence;
    this.meta = header.meta;
  }

  abstract finish(): ImageContent | string;

  drop(): void {
    closeSync(this.fd);
  }
}

/**
 * With the native helpers: the sections are mapped privately (page-cache pages until written) and verified by
 * reading the file on a native thread while the engine opens; `finish` joins in on what is left.
 */
class NativeImage extends LoadingImage {
  readonly loader = 'mapped';
  readonly checked: 'open' | 'stream';
  private readonly buffers: SharedArrayBuffer[];
  /** The checksum job, -1 when the sections were checked as the file was written. */
  private readonly job: number;

  constructor(
    fd: number,
    header: Header,
    private readonly helpers: NativeHelpers,
    verify: boolean,
  ) {
    super(fd, header);
    const triples: number[] = [];
    for (const s of header.sections) triples.push(s.offset, s.fileBytes, s.bytes);
    const [job, ...buffers] = helpers.loadSections!(fd, triples, verify);
    this.job = job;
    this.buffers = buffers;
    this.checked = job < 0 ? 'stream' : 'open';
  }

  finish(): ImageContent | string {
    if (this.job < 0) {
      closeSync(this.fd);
      return contentOf(this.header, this.buffers);
    }
    let sums: number[];
    try {
      sums = this.helpers.checksumWait(this.job);
    } catch (err) {
      return `image unreadable: ${String(err)}`;
    } finally {
      closeSync(this.fd);
    }
    const bad = this.header.sections.findIndex((s, i) => s.checksum !== sums[i]);
    if (bad >= 0) return `image checksum mismatch in section ${bad}`;
    return contentOf(this.header, this.buffers);
  }

  override drop(): void {
    try {
      if (this.job >= 0) this.helpers.checksumWait(this.job); // the job's thread must end; its result is not needed
    } catch {
      // a read error does not matter for an image that is dropped
    } finally {
      closeSync(this.fd);
    }
  }
}

/**
 * Without the native mapping: sections read into fresh SharedArrayBuffers by `finish` (once the engine is open), and
 * checksummed by the native helper where there is one.
 */
class ReadImage extends LoadingImage {
  readonly loader = 'read';
  readonly checked = 'open';

  constructor(
    fd: number,
    header: Header,
    private readonly helpers: NativeHelpers | null,
  ) {
    super(fd, header);
  }

  finish(): ImageContent | string {
    try {
      const buffers: SharedArrayBuffer[] = [];
      for (const [i, s] of this.header.sections.entries()) {
        const sab = new SharedArrayBuffer(s.bytes);
        const bytes = new Uint8Array(sab, 0, s.fileBytes);
        if (readFully(this.fd, bytes, s.offset) < s.fileBytes) return `image truncated (section ${i})`;
        const sum = this.helpers === null ? portableImageChecksum(bytes) : this.helpers.checksum(bytes);
        if (sum !== s.checksum) return `image checksum mismatch in section ${i}`;
        buffers.push(sab);
      }
      return contentOf(this.header, buffers);
    } finally {
      closeSync(this.fd);
    }
  }
}

function align(n: number): number {
  return Math.ceil(n / IMAGE_ALIGN) * IMAGE_ALIGN;
}

/** Reads into `into` from `position` until it is full or the file ends; returns the bytes read. */
function readFully(fd: number, into: Uint8Array, position: number): number {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

function writeFully(fd: number, bytes: Uint8Array, position: number): number {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  return bytes.length;
}
