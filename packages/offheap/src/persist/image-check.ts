/**
 * A map image checked while its bytes go by, in file order — as a checkpoint download writes them — instead of
 * read back from the file at the next open: the header is parsed and checked from the first bytes, then each
 * section's bytes are checksummed as they pass (the same image checksum as at an open: the CRC32C of each 64 KiB
 * chunk, then the CRC32C of those). The proof it ends with lets that open map the file without reading it first
 * (`verifiedImage` of `OffHeapMap.open`), so that a fresh copy's pages come in from the disk when first touched.
 */
import { crc32c } from '@node-rs/crc32';
import { FIXED_BYTES, type Header, headerLength, parseHeader, type Section } from './image-header.js';
import { CHECKSUM_CHUNK_BYTES } from './native.js';

const minted = Symbol('VerifiedImage');

/**
 * Proof that a map image with this exact header had every section's checksum checked as it was written. Made only
 * by {@link ImageStreamCheck}; an open given it maps an image whose header is byte for byte the same without
 * reading the sections for their checksums (the header itself, and whether the image is the engine's current
 * state, are still checked).
 */
export class VerifiedImage {
  readonly #header: Buffer;

  /** @internal */
  constructor(token: symbol, header: Buffer) {
    if (token !== minted) throw new TypeError('a VerifiedImage comes from ImageStreamCheck.end()');
    this.#header = Buffer.from(header);
  }

  /** Whether `header` (the header bytes of an image file) is the one that was checked. */
  matches(header: Uint8Array): boolean {
    return this.#header.equals(header);
  }
}

/** Checks a map image of `fileBytes` bytes from its bytes pushed in order; see the file's comment. */
export class ImageStreamCheck {
  /** Bytes seen so far: the file position of the next byte pushed. */
  private position = 0;
  /** The header's bytes while they come in, until it is parsed. */
  private headerBytes: Buffer | undefined = Buffer.alloc(FIXED_BYTES);
  private header: Header | undefined;
  /** The sections in file order, and the one being checked (or next). */
  private sections: Section[] = [];
  private current = 0;
  /** CRC32C of the current 64 KiB chunk so far, and the finished chunks' CRCs of the current section. */
  private chunkCrc = 0;
  private chunkCrcs = new Uint32Array(0);
  private chunks = 0;
  /** Why the image is not verified, once known: nothing pushed after changes that. */
  private problem: string | undefined;

  constructor(private readonly fileBytes: number) {}

  /** The next bytes of the file. Never throws for bad bytes: what is wrong is `end()`'s answer. */
  push(bytes: Uint8Array): void {
    let at = 0;
    while (at < bytes.length && this.problem === undefined) {
      if (this.header === undefined) {
        at += this.takeHeader(bytes.subarray(at));
        continue;
      }
      const s = this.sections[this.current];
      if (s === undefined) {
        // Past the last section: padding only.
        this.position += bytes.length - at;
        return;
      }
      if (this.position < s.offset) {
        const skip = Math.min(s.offset - this.position, bytes.length - at);
        this.position += skip;
        at += skip;
        continue;
      }
      const chunkEnd = Math.min(s.offset + s.fileBytes, s.offset + (this.chunks + 1) * CHECKSUM_CHUNK_BYTES);
      const take = Math.min(chunkEnd - this.position, bytes.length - at);
      this.chunkCrc = crc32c(bytes.subarray(at, at + take) as Buffer, this.chunkCrc);
      this.position += take;
      at += take;
      if (this.position === chunkEnd) {
        this.chunkCrcs[this.chunks++] = this.chunkCrc;
        this.chunkCrc = 0;
        if (this.position === s.offset + s.fileBytes) {
          this.endSection();
          this.endEmptySections();
        }
      }
    }
  }

  /**
   * After the last byte: the proof that every section matched its checksum, or why not (a damaged or cut header, a
   * section that differs, a file of another length than announced).
   */
  end(): VerifiedImage | string {
    if (this.problem !== undefined) return this.problem;
    if (this.position !== this.fileBytes) return `image of ${this.position} bytes, ${this.fileBytes} announced`;
    if (this.header === undefined) return 'image truncated (header)';
    if (this.current < this.sections.length) return `image truncated (section ${this.current})`;
    return new VerifiedImage(minted, this.header.bytes);
  }

  /** Collects header bytes from `bytes`; parses the header once complete. Returns the bytes taken. */
  private takeHeader(bytes: Uint8Array): number {
    let buffer = this.headerBytes!;
    const take = Math.min(buffer.length - this.position, bytes.length);
    buffer.set(bytes.subarray(0, take), this.position);
    this.position += take;
    if (this.position < buffer.length) return take;
    if (buffer.length === FIXED_BYTES) {
      const length = headerLength(buffer, this.fileBytes);
      if (typeof length === 'string') {
        this.problem = length;
        return take;
      }
      if (length > FIXED_BYTES) {
        buffer = Buffer.alloc(length);
        buffer.set(this.headerBytes!);
        this.headerBytes = buffer;
        return take;
      }
    }
    const header = parseHeader(buffer, this.fileBytes);
    this.headerBytes = undefined;
    if (typeof header === 'string') {
      this.problem = header;
      return take;
    }
    // Each section's bytes must come after the header and after the section before (as images are written), so
    // that one pass sees every byte of each.
    const sections = [...header.sections].sort((a, b) => a.offset - b.offset);
    let end = buffer.length;
    for (const s of sections) {
      if (s.offset < end) {
        this.problem = 'image sections overlap (cannot be checked in one pass)';
        return take;
      }
      end = s.offset + s.fileBytes;
    }
    this.header = header;
    this.sections = sections;
    this.chunkCrcs = new Uint32Array(
      Math.ceil(Math.max(0, ...sections.map((s) => s.fileBytes)) / CHECKSUM_CHUNK_BYTES),
    );
    // A section with no bytes in the file is checked at once (its checksum is that of no chunks).
    this.endEmptySections();
    return take;
  }

  private endSection(): void {
    const s = this.sections[this.current]!;
    const sum = crc32c(Buffer.from(this.chunkCrcs.buffer, 0, this.chunks * 4)) >>> 0;
    if (sum !== s.checksum) {
      this.problem = `image checksum mismatch in the section at byte ${s.offset}`;
      return;
    }
    this.current++;
    this.chunks = 0;
  }

  private endEmptySections(): void {
    while (this.problem === undefined && this.sections[this.current]?.fileBytes === 0) this.endSection();
  }
}
