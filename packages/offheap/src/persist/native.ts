import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32c } from '@node-rs/crc32';
import { nativeTarget } from './native-target.js';

/**
 * The optional native helper (native/): a Node-API binary the package ships in prebuilds/<target>/ (one for every
 * Node and Bun), and on a Node whose Node-API cannot wrap mapped memory in a SharedArrayBuffer a V8 part built for
 * its ABI (scripts/build-native.mjs). Without it everything still works: a map image is read into fresh
 * SharedArrayBuffers with plain reads once the engine is open, and checksummed here, chunk by chunk, to the same
 * values.
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
   * Why images are not mapped: the package has no helper for this platform (or its build failed, and why), the
   * helper does not load, this Node needs the V8 part and it is not built for its ABI, or `HEAPLESS_NATIVE=0` turns
   * it off. Null when they are mapped.
   */
  readonly problem: string | null;
}

/** Bytes per independently checksummed chunk of an image section. */
export const CHECKSUM_CHUNK_BYTES = 64 * 1024;

/** The helper interface this code uses (native/mapped_region.h kHelperVersion): a binary of another is not loaded. */
const HELPER_VERSION = 2;

/** What the Node-API binary exports (native/heapless_offheap.cc). */
interface HelperModule {
  helperVersion: number;
  checksum(bytes: Uint8Array): number;
  checksumStart(ranges: Uint8Array[]): number;
  fileChecksumStart(fd: number, ranges: number[]): number;
  checksumWait(id: number): number[];
  populate?(ranges: Uint8Array[]): boolean;
  /** Only where the runtime's Node-API can wrap mapped memory in a SharedArrayBuffer. */
  mapSections?: MapSections;
}

type MapSections = (fd: number, sections: number[]) => SharedArrayBuffer[];

/** What scripts/build-native.mjs records in each part's build.json. */
interface BuildRecord {
  file: string | null;
  problem: string | null;
}

/** The runtime, as a reason names it. */
function runtime(): string {
  const bun = (process.versions as Record<string, string | undefined>).bun;
  return bun === undefined ? `Node ${process.version}` : `Bun ${bun}`;
}

/** Options of {@link loadNative}. */
interface LoadOptions {
  /** The environment (`HEAPLESS_NATIVE`); default `process.env`. */
  env?: Record<string, string | undefined>;
  /** The prebuilt folder's name; default {@link nativeTarget}. */
  target?: string;
  /** 'v8': map through the V8 part even where Node-API can (its tests on every Node). */
  mapper?: 'v8';
}

/**
 * The native helper under `root` (a package folder: scripts/build-native.mjs's output in `prebuilds/<target>/` and,
 * for a Node whose Node-API cannot map, `dist/native/abi<ABI>/`) and what it can do; null helpers (with the reason
 * in `status.problem`) where there is no usable binary for this platform. Never throws.
 */
export function loadNative(
  root: string,
  { env = process.env, target = nativeTarget(), mapper: prefer }: LoadOptions = {},
): { helpers: NativeHelpers | null; status: NativeStatus } {
  const without = (problem: string) => ({
    helpers: null,
    status: { imageLoader: 'read', mapper: null, problem } as const,
  });
  if (env.HEAPLESS_NATIVE === '0') return without(TURNED_OFF);
  const dir = join(root, 'prebuilds', target);
  const built = readRecord(dir);
  if (!existsSync(join(dir, HELPER_FILE))) {
    return without(
      built?.problem != null
        ? `the native helper for ${target} was not built: ${built.problem}`
        : `this package has no native helper for ${target} (${join(dir, HELPER_FILE)})`,
    );
  }
  const helper = loadModule<HelperModule>(join(dir, HELPER_FILE));
  if (typeof helper === 'string') return without(helper);
  let map: MapSections | null = null;
  let mapper: NativeStatus['mapper'] = null;
  let problem: string | null = null;
  if (helper.mapSections !== undefined && prefer !== 'v8') {
    map = helper.mapSections;
    mapper = 'node-api';
  } else {
    const v8Dir = join(root, 'dist', 'native', `abi${process.versions.modules}`);
    const v8 = existsSync(join(v8Dir, V8_FILE))
      ? loadModule<{ helperVersion: number; mapSections: MapSections }>(join(v8Dir, V8_FILE))
      : `its V8 part is not built for this ABI (${process.versions.modules})${withReason(readRecord(v8Dir))}: run node ${join(root, 'scripts', 'build-native.mjs')} under this Node, with a C++ compiler`;
    if (typeof v8 === 'string') {
      problem = `${runtime()} cannot wrap mapped memory in a SharedArrayBuffer through Node-API (Node 22.23, 24.22 and 26 can), and ${v8}`;
    } else {
      map = v8.mapSections;
      mapper = 'v8';
    }
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
  return { helpers, status: { imageLoader: mapper === null ? 'read' : 'mapped', mapper, problem } };
}

const HELPER_FILE = 'heapless_offheap.node';
const V8_FILE = 'heapless_offheap_v8.node';
const TURNED_OFF = 'HEAPLESS_NATIVE=0 turns the native helper off';

function readRecord(dir: string): BuildRecord | null {
  try {
    return JSON.parse(readFileSync(join(dir, 'build.json'), 'utf8')) as BuildRecord;
  } catch {
    return null;
  }
}

function withReason(record: BuildRecord | null): string {
  return record?.problem != null ? ` (its build failed: ${record.problem})` : '';
}

/** A native module of this interface version, or why it cannot be used. */
function loadModule<T extends { helperVersion: number }>(path: string): T | string {
  try {
    const m = createRequire(import.meta.url)(path) as T;
    if (m.helperVersion !== HELPER_VERSION) {
      return `${path} is a build of other sources (helper interface ${m.helperVersion}, not ${HELPER_VERSION}): run pnpm build`;
    }
    return m;
  } catch (err) {
    return `${path} does not load: ${err instanceof Error ? err.message : String(err)}`;
  }
}

// From src/ (tests) and from dist/ alike, the package folder is ../../.
const loaded = loadNative(fileURLToPath(new URL('../../', import.meta.url)));

/** The native helper, or null where there is none for this platform (or `HEAPLESS_NATIVE=0` asks not to use it). */
export const native: NativeHelpers | null = loaded.helpers;

/** What this process has of the native helper: how map images load, and why not natively. */
export const nativeStatus: NativeStatus = loaded.status;

let warned = false;

/**
 * Emits, once per process, the warning `HEAPLESS_WARN_OFFHEAP_NATIVE_UNAVAILABLE` saying that map images load with plain reads
 * and why, when `status` says so for a reason other than `HEAPLESS_NATIVE=0` (a choice, not a problem). Called
 * where a map first loads an image. True if it emitted.
 */
export function warnIfNotMapped(status: NativeStatus = nativeStatus): boolean {
  if (warned || status.imageLoader === 'mapped' || status.problem === TURNED_OFF) return false;
  warned = true;
  process.emitWarning(`map images load with plain reads, ${SLOWER}: ${status.problem}`, {
    code: 'HEAPLESS_WARN_OFFHEAP_NATIVE_UNAVAILABLE',
  });
  return true;
}

/** What plain reads cost, measured (README, "The native helper"). */
const SLOWER = 'not mapped: an open from a large image takes about twice as long and copies all of it into memory';

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
