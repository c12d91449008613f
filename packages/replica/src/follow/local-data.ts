/**
 * The follower's data directory on disk: opening the map in it, replacing it by a downloaded checkpoint, and
 * dropping it. A replacement downloads into a new sibling directory (checked file by file by the checkpoint store),
 * moves the old directory aside, renames the new one into place and only then removes the old one, so that a crash
 * at any point leaves either the old data, the new data, or no directory at all (which the next start treats as no
 * local data); the leftovers of such a crash are removed at the next start.
 */
import { type FileHandle, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { MAP_IMAGE_FILE, OffHeapMap, type OffHeapMapOpenOptions } from '@heapless/offheap';
import { nuid } from '@nats-io/nats-core';
import type { CheckpointManifest } from '../checkpoint/checkpoint-manifest.js';
import type { CheckpointStore, CheckpointSummary } from '../checkpoint/checkpoint-store.js';
import { ReplicaError } from '../errors.js';
import { META_CHECKPOINT, metaText, readFollowerState } from './follower-meta.js';

/** How the follower's map is opened: every option of `OffHeapMap.open` but the directory. */
export type MapOpenOptions = Omit<OffHeapMapOpenOptions, 'dir'>;

/** The suffixes of the sibling directories this file makes beside the data directory. */
const SIBLINGS = ['.incoming-', '.old-', '.checkpoint-'] as const;

/** A sibling directory of `dir` for `purpose`, unique. */
export function siblingDir(dir: string, purpose: (typeof SIBLINGS)[number]): string {
  const abs = resolve(dir);
  return join(dirname(abs), `${basename(abs)}${purpose}${nuid.next()}`);
}

/** Removes what a crash in the middle of a replacement or a checkpoint left beside `dir`. */
export async function removeLeftovers(dir: string): Promise<void> {
  const abs = resolve(dir);
  const parent = dirname(abs);
  const name = basename(abs);
  const entries = await readdir(parent).catch(() => [] as string[]);
  for (const entry of entries) {
    if (SIBLINGS.some((s) => entry.startsWith(`${name}${s}`)))
      await rm(join(parent, entry), { recursive: true, force: true });
  }
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Opens (creating) the map in `dir`. */
export function openMap(dir: string, options: MapOpenOptions): Promise<OffHeapMap<string, unknown>> {
  return OffHeapMap.open<string, unknown>({ ...options, dir });
}

/** Bytes read at a time by {@link readIntoMemory}. */
const WARM_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads the file `path` once, from start to end, a chunk at a time on the thread pool, so that its pages are in the
 * page cache: a map image mapped unread (after a checkpoint download) then serves reads without waiting for the
 * disk, and the next image written from the map does not read the old one from the disk while it holds the writer.
 * Stops early once `stop()` says so. Resolves with the bytes read; a read error ends it quietly (the pages are then
 * read when touched, as before).
 */
export async function readIntoMemory(path: string, stop: () => boolean): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return 0;
  }
  const buffer = Buffer.allocUnsafe(WARM_CHUNK_BYTES);
  let at = 0;
  try {
    while (!stop()) {
      const { bytesRead } = await handle.read(buffer, 0, WARM_CHUNK_BYTES, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
  } catch {
    // the pages not read yet come in when first touched
  } finally {
    await handle.close().catch(() => {});
  }
  return at;
}

/** Removes the data directory (its map must be closed): moved aside first, so a crash leaves no half-removed one. */
export async function dropLocalData(dir: string): Promise<void> {
  if (!(await exists(dir))) return;
  const old = siblingDir(dir, '.old-');
  await rename(dir, old);
  await rm(old, { recursive: true, force: true });
}

/** What {@link installCheckpoint} opened. */
export interface InstalledCheckpoint {
  readonly map: OffHeapMap<string, unknown>;
  readonly manifest: CheckpointManifest;
  /** Milliseconds of the download (every file written, checked and fsynced). */
  readonly downloadMs: number;
  /** Milliseconds of the map's open from the checkpoint. */
  readonly openMs: number;
}

/**
 * Downloads `checkpoint`, puts it in place of `dir` (whose map must be closed) and opens the map from it. Checks
 * that the data holds the position and schema its manifest says (CHECKPOINT_CORRUPT otherwise: nothing of it is
 * kept), and records the checkpoint's id in the map's metadata. The caller owns the returned map.
 */
export async function installCheckpoint(
  store: CheckpointStore,
  checkpoint: CheckpointSummary,
  dir: string,
  options: MapOpenOptions,
): Promise<InstalledCheckpoint> {
  const incoming = siblingDir(dir, '.incoming-');
  const started = performance.now();
  // The image is not fsynced: one that a crash leaves damaged fails its checksums and the map scans its engine.
  // Checked as it was written, it is mapped without reading it: its pages come in from the disk as they are used.
  const { manifest, verifiedImage } = await store.download(checkpoint, incoming, { mapImage: MAP_IMAGE_FILE });
  const downloadMs = performance.now() - started;
  await dropLocalData(dir);
  await rename(incoming, dir);
  const opening = performance.now();
  const map = await openMap(dir, verifiedImage === undefined ? options : { ...options, verifiedImage });
  const openMs = performance.now() - opening;
  try {
    const state = readFollowerState(map);
    if (state.position !== manifest.position || state.schema !== manifest.schema)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
        `checkpoint ${manifest.id}: its data is at position ${state.position} of schema ${state.schema}, ` +
          `its manifest says ${manifest.position} of ${manifest.schema}`,
      );
    await map.meta.set(META_CHECKPOINT, metaText(manifest.id));
  } catch (err) {
    await map.close();
    await dropLocalData(dir); // not what it claims to be: the next start must not take it for local data
    throw err;
  }
  return { map, manifest, downloadMs, openMs };
}
