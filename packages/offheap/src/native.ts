import { createRequire } from 'node:module';
import { crc32c } from '@node-rs/crc32';

/**
 * The optional native helpers (native/heapless_offheap.cc, built by scripts/build-native.mjs into
 * dist/heapless_offheap.node). Without them everything still works: a map image is read into fresh
 * SharedArrayBuffers with plain reads once the engine is open, and checksummed here, chunk by chunk, to the same
 * values.
 */
export interface NativeHelpers {
  /**
   * One buffer per `[offset, fileLength, length]` triple: `length` bytes of private memory mapping the file's
   * `fileLength` bytes at `offset` (zero after), and a job that checksums those bytes of the file on a thread of its
   * own. Returns the job id, then the buffers; use them once `checksumWait(id)` returned the expected checksums.
   */
  loadSections(fd: number, sections: number[]): [number, ...SharedArrayBuffer[]];
  /** The image checksum (see {@link imageChecksum}) of `buffer[offset, offset + length)`. */
  checksum(buffer: ArrayBufferLike | ArrayBufferView, offset: number, length: number): number;
  /**
   * Starts checksums of `[buffer, offset, length, ...]` on a thread of its own (which holds the buffers' memory until
   * waited for); returns the job's id.
   */
  checksumStart(ranges: (ArrayBufferLike | ArrayBufferView | number)[]): number;
  /**
   * Waits for job `id` (working on it too) and returns its checksums in order; throws (with `code`) if a read of a
   * `loadSections` job failed. Every started job must be waited for.
   */
  checksumWait(id: number): number[];
}

/** Bytes per independently checksummed chunk of an image section. */
export const CHECKSUM_CHUNK_BYTES = 64 * 1024;

/** The native helpers, or null where they were not built (or `HEAPLESS_NATIVE=0` asks not to use them). */
export const native: NativeHelpers | null = loadNative();

function loadNative(): NativeHelpers | null {
  if (process.env.HEAPLESS_NATIVE === '0') return null;
  try {
    // From src/ (tests) and from dist/ alike, the built addon is ../dist/.
    return createRequire(import.meta.url)('../dist/heapless_offheap.node') as NativeHelpers;
  } catch {
    return null;
  }
}

/**
 * The checksum of an image section: the CRC32C of each 64 KiB chunk (the last one shorter), then the CRC32C of
 * those CRCs as u32 little-endian. Chunks are independent so the native helper can run several at once and on two
 * threads; this is the same computation in plain calls of @node-rs/crc32.
 */
export function imageChecksum(bytes: Uint8Array): number {
  return native !== null ? native.checksum(bytes, 0, bytes.length) : portableImageChecksum(bytes);
}

/** {@link imageChecksum} without the native helpers. */
export function portableImageChecksum(bytes: Uint8Array): number {
  const chunks = Math.ceil(bytes.length / CHECKSUM_CHUNK_BYTES);
  const crcs = new Uint32Array(chunks);
  for (let i = 0; i < chunks; i++) {
    crcs[i] = crc32c(bytes.subarray(i * CHECKSUM_CHUNK_BYTES, (i + 1) * CHECKSUM_CHUNK_BYTES)) >>> 0;
  }
  return crc32c(new Uint8Array(crcs.buffer)) >>> 0;
}
