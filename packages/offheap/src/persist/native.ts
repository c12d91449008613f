import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32c } from '@node-rs/crc32';

/**
 * The optional native helper (native/, built by scripts/build-native.mjs into dist/native/abi<ABI>/ for each Node
 * ABI it ran under). Without it everything still works: a map image is read into fresh SharedArrayBuffers with
 * plain reads once the engine is open, and checksummed here, chunk by chunk, to the same values.
 */
export interface NativeHelpers {
  /** The image checksum (see {@link imageChecksum}) of `bytes` (over an ArrayBuffer or a SharedArrayBuffer). */
  checksum(bytes: Uint8Array): number;
  /**
   * Starts the checksums of `ranges` on a thread of its own (which holds their memory until waited for); returns the
   * job's id.
   */
  checksumStart(ranges: Uint8Array[]): number;
  /**
   * Waits for job `id` (working on it too) and returns its checksums in order; throws (with `code`) if a read of a
   * `loadSections` job failed. Every started job must be waited for.
   */
  checksumWait(id: number): number[];
  /**
   * One buffer per `[offset, fileLength, length]` triple: `length` bytes of private memory mapping the file's
   * `fileLength` bytes at `offset` (zero after), and a job that checksums those bytes of the file on a thread of its
   * own. Returns the job id, then the buffers; use them once `checksumWait(id)` returned the expected checksums.
   * With `verify` false (sections checked already) no job is started and the id is -1. Null where the helper cannot
   * map memory into a SharedArrayBuffer on this Node ({@link NativeStatus.problem}).
   */
  loadSections: ((fd: number, sections: number[], verify?: boolean) => [number, ...SharedArrayBuffer[]]) | null;
  /**
   * Makes the pages of each range present and private to this process (madvise MADV_POPULATE_WRITE), so that writes
   * to a mapped section no longer fault a page at a time. False where the kernel cannot (before Linux 5.14); null
   * where the helper build has no such call. Throws (with `code`) on any other failure.
   */
  populate: ((ranges: Uint8Array[]) => boolean) | null;
}

/**
 * How a map image is read: `'mapped'` by the native helper (the file's pages mapped, verified on a native thread
 * while the engine opens), `'read'` with plain reads into fresh memory once the engine is open.
 */
export type ImageLoader = 'mapped' | 'read';

/** What this process has of the native helper, for start-up logs. */
export interface NativeStatus {
  /** The loader map images open with in this process. */
  readonly imageLoader: ImageLoader;
  /** What maps image sections: the helper through Node-API, its V8 part (Node 20), or nothing. */
  readonly mapper: 'node-api' | 'v8' | null;
  /**
   * Why images are not mapped: the helper is not built for this Node (and why the build failed), was built for
   * another Node, does not load, or `HEAPLESS_NATIVE=0` turns it off. Null when they are mapped.
   */
  readonly problem: string | null;
}

/** Bytes per independently checksummed chunk of an image section. */
export const CHECKSUM_CHUNK_BYTES = 64 * 1024;

/** What the Node-API build exports (native/heapless_offheap.cc). */
interface HelperModule {
  builtFor: string;
  checksum(bytes: Uint8Array): number;
  checksumStart(ranges: Uint8Array[]): number;
  fileChecksumStart(fd: number, ranges: number[]): number;
  checksumWait(id: number): number[];
  populate?(ranges: Uint8Array[]): boolean;
  /** Only where this Node's Node-API can wrap mapped memory in a SharedArrayBuffer. */
  mapSections?: MapSections;
}

type MapSections = (fd: number, sections: number[]) => SharedArrayBuffer[];

/** What scripts/build-native.mjs records in build.json. */
interface BuildRecord {
  node: string;
  helper: string | null;
  mapper: 'node-api' | 'v8' | null;
  problem: string | null;
}

/**
 * The native helper built in `dir` (one ABI's output of scripts/build-native.mjs) and what it can do; null helpers
 * (with the reason in `status.problem`) where there is no usable build for this Node. Never throws.
 */
export function loadNative(
  dir: string,
  env: Record<string, string | undefined> = process.env,
): { helpers: NativeHelpers | null; status: NativeStatus } {
  const without = (problem: string) => ({
    helpers: null,
    status: { imageLoader: 'read', mapper: null, problem } as const,
  });
  if (env.HEAPLESS_NATIVE === '0') return without('HEAPLESS_NATIVE=0 turns the native helper off');
  const here = `Node ${process.version} (ABI ${process.versions.modules})`;
  let build: BuildRecord;
  try {
    build = JSON.parse(readFileSync(join(dir, 'build.json'), 'utf8')) as BuildRecord;
  } catch {
    return without(`native helper not built for ${here} (no ${join(dir, 'build.json')}): run pnpm build`);
  }
  if (build.node !== process.version) {
    return without(`native helper built for Node ${build.node}, not ${here}: run pnpm build`);
  }
  if (build.helper === null) return without(`native helper not built for ${here}: ${build.problem}`);
  const helper = loadModule<HelperModule>(join(dir, build.helper));
  if (typeof helper === 'string') return without(helper);
  let map: MapSections | null = null;
  let problem = build.problem;
  if (build.mapper === 'node-api' && helper.mapSections !== undefined) {
    map = helper.mapSections;
  } else if (build.mapper === 'v8') {
    const v8 = loadModule<{ builtFor: string; mapSections: MapSections }>(join(dir, 'heapless_offheap_v8.node'));
    if (typeof v8 === 'string') problem = v8;
    else map = v8.mapSections;
  } else {
    problem = `native helper for ${here} cannot map image sections${build.problem === null ? '' : `: ${build.problem}`}`;
  }
  const mapSections = map;
  const helpers: NativeHelpers = {
    checksum: (bytes) => helper.checksum(bytes),
    checksumStart: (ranges) => helper.checksumStart(ranges),
    checksumWait: (id) => helper.checksumWait(id),
    populate: helper.populate === undefined ? null : (ranges) => helper.populate!(ranges),
    loadSections:
      mapSections === null
        ? null
        : (fd, sections, verify = true) => {
            const buffers = mapSections(fd, sections);
            if (!verify) return [-1, ...buffers];
            const ranges: number[] = [];
            for (let i = 0; i + 2 < sections.length; i += 3) ranges.push(sections[i]!, sections[i + 1]!);
            return [helper.fileChecksumStart(fd, ranges), ...buffers];
          },
  };
  const mapper = mapSections === null ? null : build.mapper;
  return {
    helpers,
    status: { imageLoader: mapper === null ? 'read' : 'mapped', mapper, problem: mapper === null ? problem : null },
  };
}

/** A native module of this Node's build, or why it cannot be used. */
function loadModule<T extends { builtFor: string }>(path: string): T | string {
  try {
    const m = createRequire(import.meta.url)(path) as T;
    if (m.builtFor !== process.version)
      return `${path} was built for Node ${m.builtFor}, not ${process.version}: run pnpm build`;
    return m;
  } catch (err) {
    return `${path} does not load: ${err instanceof Error ? err.message : String(err)}`;
  }
}

// From src/ (tests) and from dist/ alike, the build for this Node's ABI is ../dist/native/abi<ABI>/.
const loaded = loadNative(fileURLToPath(new URL(`../../dist/native/abi${process.versions.modules}/`, import.meta.url)));

/** The native helper, or null where it is not built for this Node (or `HEAPLESS_NATIVE=0` asks not to use it). */
export const native: NativeHelpers | null = loaded.helpers;

/** What this process has of the native helper: how map images load, and why not natively. */
export const nativeStatus: NativeStatus = loaded.status;

/**
 * The checksum of an image section: the CRC32C of each 64 KiB chunk (the last one shorter), then the CRC32C of
 * those CRCs as u32 little-endian. Chunks are independent so the native helper can run several at once and on two
 * threads; this is the same computation in plain calls of @node-rs/crc32.
 */
export function imageChecksum(bytes: Uint8Array): number {
  return native !== null ? native.checksum(bytes) : portableImageChecksum(bytes);
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
