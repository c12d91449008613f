import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SLOT_BYTES } from '../memory/hash-table.js';
import type { VerifiedImage } from './image-check.js';
import {
  encodeHeader,
  type Header,
  type ImageContent,
  readFully,
  readHeader,
  type SectionSource,
} from './image-header.js';
import { type ImageLoader, type NativeHelpers, native, portableImageChecksum } from './native.js';

/**
 * Writing a map image and loading it back (the file's layout, and its header's encoding and checks, are in
 * image-header.ts; checking a file as it streams in, image-check.ts).
 */

/** The map image's file name in a map's directory (exported as MAP_IMAGE_FILE). */
export const IMAGE_FILE = 'MAPIMAGE';
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
  const sections: SectionSource[] = [
    { buf: content.table, fileBytes: content.capacity * SLOT_BYTES },
    ...content.segments.map((buf, i) => ({ buf, fileBytes: segmentBytes(i) })),
  ];
  const { header, offsets } = encodeHeader(content, sections);
  const fd = openSync(path, 'w');
  let written = 0;
  try {
    written += writeFully(fd, header, 0);
    for (const [i, s] of sections.entries())
      written += writeFully(fd, new Uint8Array(s.buf, 0, s.fileBytes), offsets[i]!);
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

function writeFully(fd: number, bytes: Uint8Array, position: number): number {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  return bytes.length;
}
