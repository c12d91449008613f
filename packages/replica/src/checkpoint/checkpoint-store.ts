/**
 * Checkpoints shared through a JetStream object store bucket (FORMAT.md, "Checkpoints"). A checkpoint is a
 * directory uploaded as one object per file plus a manifest (position, schema id, sizes, SHA-256), the manifest
 * last, so that a checkpoint is listed only once all of it is there. A download goes into a new directory beside
 * the destination, checks every byte against the manifest, and is renamed into place only when all is well:
 * nothing half-installed is ever at the destination.
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ImageStreamCheck, type VerifiedImage } from '@heapless/offheap';
import type { NatsConnection } from '@nats-io/nats-core';
import { nuid } from '@nats-io/nats-core';
import { type ObjectInfo, type ObjectStore, Objm, StorageType, setSha256Backend } from '@nats-io/obj';
import { checkName, checkSchemaId } from '../change/change-format.js';
import { checkPosition, readStreamPosition } from '../change/change-stream.js';
import { durationMs } from '../duration.js';
import { ReplicaError } from '../errors.js';
import { replicaErrorOf } from '../nats/nats-errors.js';
import { FILE_CHUNK_BYTES, listFiles, readHashed, syncDir, writeChecked } from './checkpoint-files.js';
import { FrameEncoder, LZ4_FRAMES } from './checkpoint-frames.js';
import {
  type CheckpointFile,
  type CheckpointManifest,
  checkpointId,
  checkpointObjects,
  decodeManifest,
  encodeManifest,
  fileObject,
  MANIFEST_FORMAT,
  manifestObject,
  parseManifestObject,
} from './checkpoint-manifest.js';
import { StoredObjects } from './checkpoint-uploaded.js';

/** Options of {@link CheckpointStore.open}. */
export interface CheckpointStoreOptions {
  /** The bucket's name (1-64 of `A-Z a-z 0-9 _ -`). */
  readonly bucket: string;
  /** Copies of the bucket on a cluster when it is created; default 1. */
  readonly replicas?: number;
  /** `file` (default) or `memory`, when it is created. */
  readonly storage?: 'file' | 'memory';
  /** Create the bucket when it is missing (default true); false makes a missing bucket CHECKPOINT_NOT_FOUND. */
  readonly create?: boolean;
  /** Longest wait for one object store request, and for the next chunk of a download; default 30 s. */
  readonly timeoutMs?: number;
}

/** A complete checkpoint in the bucket, as its listing shows it (its manifest not read yet). */
export interface CheckpointSummary {
  readonly id: string;
  readonly schema: string;
  readonly position: number;
  /** When its manifest was stored (ISO 8601). */
  readonly uploadedAt: string;
}

/** What {@link CheckpointStore.download} wrote. */
export interface DownloadedCheckpoint {
  readonly manifest: CheckpointManifest;
  /** With `mapImage`: the proof that the image passed its own checks as it was written (else undefined). */
  readonly verifiedImage: VerifiedImage | undefined;
}

/** What an upload records about the files. */
export interface UploadOptions {
  /** The schema id of the values in the files. */
  readonly schema: string;
  /** The stream position the files are at. */
  readonly position: number;
  /** The change stream the position belongs to, recorded in the manifest. */
  readonly stream?: string;
  /**
   * `lz4` (default): each file is stored as LZ4-compressed frames (FORMAT.md, "File encodings"), chunks that do not
   * shrink staying raw; `none`: as it is, which readers of manifest format 1 understand too.
   */
  readonly compression?: 'lz4' | 'none';
}

/** One bucket of checkpoints over a connection the caller owns. Create with {@link CheckpointStore.open}. */
export class CheckpointStore {
  private constructor(
    private readonly store: ObjectStore,
    /** The bucket's name. */
    readonly bucket: string,
    private readonly timeoutMs: number,
    private readonly nc: NatsConnection,
  ) {}

  /**
   * Opens (by default creating) the bucket. Throws INVALID_ARGUMENT, CHECKPOINT_NOT_FOUND (missing and `create:
   * false`), UNAVAILABLE, NATS_ERROR.
   */
  static async open(nc: NatsConnection, options: CheckpointStoreOptions): Promise<CheckpointStore> {
    const bucket = checkName('a bucket name', options.bucket);
    const timeoutMs = durationMs('timeoutMs', options.timeoutMs ?? 30_000);
    // The object store checks every object's SHA-256 in pure JavaScript unless told to use node:crypto, which is
    // several times faster on checkpoint-sized objects. The setting is process-wide and changes no result.
    setSha256Backend('native');
    const objm = new Objm(nc);
    try {
      // The bucket is the stream OBJ_<bucket>; asking for it first tells "missing" apart from other failures.
      if (options.create === false) await readStreamPosition(nc, `OBJ_${bucket}`, { timeoutMs });
      const store =
        options.create === false
          ? await objm.open(bucket, false)
          : await objm.create(bucket, {
              replicas: options.replicas ?? 1,
              storage: options.storage === 'memory' ? StorageType.Memory : StorageType.File,
            });
      return new CheckpointStore(store, bucket, timeoutMs, nc);
    } catch (err) {
      const mapped = replicaErrorOf(err, `bucket ${bucket}`);
      if (mapped.code === 'HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND')
        throw new ReplicaError('HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND', mapped.message);
      throw mapped;
    }
  }

  /**
   * Uploads every file under `dir` as a checkpoint at `options.position`, the manifest last. The files must not
   * change meanwhile (use a checkpoint directory, not a live store). Returns the manifest. Throws INVALID_ARGUMENT
   * (not a directory, a link or special file in it, a file that changed under the upload), UNAVAILABLE,
   * NATS_ERROR, with the error that stopped the upload; after a failure every message the upload stored is purged
   * (best effort: the error says what could not be, and without a manifest those objects are never listed anyway).
   */
  async upload(dir: string, options: UploadOptions): Promise<CheckpointManifest> {
    const schema = checkSchemaId(options.schema);
    checkPosition(options.position);
    if (options.stream !== undefined) checkName('a stream name', options.stream);
    const compression = options.compression ?? 'lz4';
    if (compression !== 'lz4' && compression !== 'none')
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `compression must be lz4 or none, got ${String(compression)}`,
      );
    const id = checkpointId(options.position, nuid.next());
    const local = await listFiles(dir);
    const files: CheckpointFile[] = [];
    const written = new StoredObjects(this.nc, this.bucket, this.timeoutMs);
    try {
      for (const file of local) {
        const read = await readHashed(file);
        try {
          const name = fileObject(schema, id, file.path);
          const encoder = compression === 'lz4' ? new FrameEncoder() : undefined;
          const body = encoder === undefined ? read.stream : read.stream.pipeThrough(encoder);
          written.attempt(name);
          const stored = await this.store.put({ name, options: { max_chunk_size: FILE_CHUNK_BYTES } }, body, {
            timeout: this.timeoutMs,
          });
          written.stored(stored);
          const { size, sha256 } = read.result();
          if (size !== file.size)
            throw new ReplicaError(
              'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
              `${file.absolute} changed during the upload`,
            );
          files.push(
            encoder === undefined
              ? { path: file.path, size, sha256 }
              : {
                  path: file.path,
                  size,
                  sha256,
                  encoding: LZ4_FRAMES,
                  storedSize: encoder.storedBytes,
                  storedSha256: digestHex(stored.digest),
                },
          );
        } finally {
          await read.close();
        }
      }
      const manifest: CheckpointManifest = {
        format: MANIFEST_FORMAT,
        id,
        schema,
        position: options.position,
        stream: options.stream,
        createdAt: new Date().toISOString(),
        files,
        totalBytes: files.reduce((sum, f) => sum + f.size, 0),
      };
      written.attempt(manifestObject(schema, id));
      await this.store.putBlob({ name: manifestObject(schema, id) }, encodeManifest(manifest), {
        timeout: this.timeoutMs,
      });
      return manifest;
    } catch (err) {
      const error = replicaErrorOf(err, `upload of ${dir} to ${this.bucket}`);
      const left = await written.purge();
      if (left !== undefined) error.message += `; cleaning up after it, ${left}`;
      throw error;
    }
  }

  /**
   * The complete checkpoints of `schema` (of every schema if undefined), newest first: by position, then by upload
   * time. Throws UNAVAILABLE, NATS_ERROR.
   */
  async list(schema?: string): Promise<CheckpointSummary[]> {
    if (schema !== undefined) checkSchemaId(schema);
    const found: CheckpointSummary[] = [];
    for (const info of await this.objects()) {
      const parsed = parseManifestObject(info.name);
      if (parsed === undefined || (schema !== undefined && parsed.schema !== schema)) continue;
      found.push({ ...parsed, uploadedAt: info.mtime });
    }
    return found.sort((a, b) => b.position - a.position || (a.uploadedAt < b.uploadedAt ? 1 : -1));
  }

  /** The newest complete checkpoint of `schema`, or undefined when it has none. */
  async newest(schema: string): Promise<CheckpointSummary | undefined> {
    return (await this.list(schema))[0];
  }

  /** Reads and checks a checkpoint's manifest. Throws CHECKPOINT_NOT_FOUND, CHECKPOINT_CORRUPT, UNAVAILABLE. */
  async manifest(checkpoint: { schema: string; id: string }): Promise<CheckpointManifest> {
    const name = manifestObject(checkSchemaId(checkpoint.schema), checkpoint.id);
    let bytes: Uint8Array | null;
    try {
      bytes = await this.store.getBlob(name);
    } catch (err) {
      throw this.readError(err, name);
    }
    if (bytes === null)
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND', `no checkpoint ${name} in ${this.bucket}`);
    return decodeManifest(bytes, checkpoint);
  }

  /**
   * {@link manifest}, or undefined for a checkpoint deleted since it was listed (another publisher's prune): a walk
   * over `list()` skips it rather than failing.
   */
  async manifestIfPresent(checkpoint: { schema: string; id: string }): Promise<CheckpointManifest | undefined> {
    try {
      return await this.manifest(checkpoint);
    } catch (err) {
      if (err instanceof ReplicaError && err.code === 'HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND') return undefined;
      throw err;
    }
  }

  /**
   * Downloads a checkpoint into the directory `dest`, which must not exist (its parent must). The files are written
   * into a new sibling directory, several at once, each checked for its size and SHA-256 and fsynced, and that
   * directory is renamed to `dest` only when every file is right; on any failure it is removed and `dest` is left
   * absent. Throws INVALID_ARGUMENT (`dest` exists, or its folder does not), CHECKPOINT_NOT_FOUND,
   * CHECKPOINT_CORRUPT (a malformed manifest, a missing object, a size or checksum that differs, a damaged frame),
   * UNAVAILABLE, LOCAL_IO (a file or folder that could not be written here).
   *
   * `options.mapImage` names the checkpoint's map image (a follower's is `MAPIMAGE`). Its stored bytes are checked
   * like any file's; decoded, it is checked against its own checksums as it is written (an `ImageStreamCheck`)
   * instead of hashed, it is written around the page cache (O_DIRECT), and it is not fsynced (a map that finds it
   * damaged after a crash rebuilds from its engine): at hundreds of megabytes, hashing it and filling memory with it
   * are most of a fast download. The result's `verifiedImage` is the proof for `OffHeapMap.open`, which then maps
   * the image without reading it; undefined when the image failed its own checks (the open then finds that too, and
   * rebuilds the map by a scan of the engine).
   */
  async download(
    checkpoint: { schema: string; id: string },
    dest: string,
    options: { mapImage?: string } = {},
  ): Promise<DownloadedCheckpoint> {
    if (await exists(dest))
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `${dest} exists: a download makes it`);
    if (!(await exists(dirname(dest))))
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `${dirname(dest)}, the folder of ${dest}, does not exist`,
      );
    const manifest = await this.manifest(checkpoint);
    const partial = join(dirname(dest), `.${manifest.id}.partial-${nuid.next()}`);
    let verifiedImage: VerifiedImage | undefined;
    try {
      await mkdir(partial);
      // The largest first: the map image, most of the bytes, downloads while the tables go beside it.
      const bySize = [...manifest.files].sort((a, b) => b.size - a.size);
      await inParallel(bySize, FILES_IN_FLIGHT, async (file) => {
        if (file.path !== options.mapImage) return this.downloadFile(manifest, file, partial);
        const check = new ImageStreamCheck(file.size);
        await this.downloadFile(manifest, file, partial, check);
        const proof = check.end();
        if (typeof proof !== 'string') verifiedImage = proof;
      });
      await syncDir(partial);
      await rename(partial, dest);
      await syncDir(dirname(dest));
      return { manifest, verifiedImage };
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      throw replicaErrorOf(err, `download of checkpoint ${manifest.id} into ${dest}`);
    }
  }

  /**
   * Removes all but the newest `keep` checkpoints of `schema` (each manifest first, so a half-removed checkpoint is
   * never listed), and returns the ids removed. With `stream`, only the checkpoints whose manifest names that
   * stream count and go (a bucket may hold the checkpoints of several streams). Uploads in progress (no manifest
   * yet) are left alone. Throws INVALID_ARGUMENT, UNAVAILABLE, NATS_ERROR, CHECKPOINT_CORRUPT (a manifest read for
   * `stream`).
   */
  async prune(schema: string, keep: number, options: { stream?: string } = {}): Promise<string[]> {
    if (!Number.isSafeInteger(keep) || keep < 1)
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `keep must be a positive integer, got ${keep}`);
    let candidates = await this.list(schema);
    if (options.stream !== undefined) {
      const ofStream: CheckpointSummary[] = [];
      for (const c of candidates) if ((await this.manifestIfPresent(c))?.stream === options.stream) ofStream.push(c);
      candidates = ofStream;
    }
    const removed: string[] = [];
    for (const old of candidates.slice(keep)) {
      await this.purgeCheckpoint(old);
      removed.push(old.id);
    }
    return removed;
  }

  private async downloadFile(
    manifest: CheckpointManifest,
    file: CheckpointFile,
    into: string,
    image?: ImageStreamCheck,
  ): Promise<void> {
    const name = fileObject(manifest.schema, manifest.id, file.path);
    let result: Awaited<ReturnType<ObjectStore['get']>>;
    try {
      result = await this.store.get(name);
    } catch (err) {
      throw this.readError(err, name);
    }
    if (result === null)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
        `${name}: the manifest names it, it is missing`,
      );
    const stored = file.storedSize ?? file.size;
    // The object store checks the bytes it sends against the object's SHA-256 (and fails the stream if they
    // differ); that digest must be the manifest's, which pins the object. Decoded bytes are hashed once more, as
    // a check on the writer's encoder, but for a map image, which checks itself as it is written.
    const digest = digestHex(result.info.digest);
    const expected = file.storedSha256 ?? file.sha256;
    const mismatch =
      result.info.size !== stored
        ? `${result.info.size} bytes stored, the manifest says ${stored}`
        : digest !== expected
          ? `SHA-256 ${digest} stored, the manifest says ${expected}`
          : undefined;
    if (mismatch !== undefined) {
      await result.data.cancel().catch(() => {});
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT', `${name}: ${mismatch}`);
    }
    const absolute = join(into, ...file.path.split('/'));
    await mkdir(dirname(absolute), { recursive: true });
    try {
      await writeChecked(result.data, absolute, file, name, {
        idleMs: this.timeoutMs,
        sync: image === undefined,
        hash: file.encoding !== undefined && image === undefined,
        frames: file.encoding === LZ4_FRAMES,
        ...(image === undefined ? {} : { check: image, direct: true }),
      });
    } catch (err) {
      throw this.readError(err, name);
    }
  }

  /** A read's failure: the object store's own digest check is corruption; anything else is mapped as usual. */
  private readError(err: unknown, name: string): ReplicaError {
    // nats.js says so only in the message of a plain Error, at the end of an object whose chunks differ.
    if (err instanceof Error && !(err instanceof ReplicaError) && /digests do not match|corrupt/.test(err.message))
      return new ReplicaError('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT', `${name}: ${err.message}`, { cause: err });
    return replicaErrorOf(err, `reading ${name} from ${this.bucket}`);
  }

  private async objects(): Promise<ObjectInfo[]> {
    try {
      return (await this.store.list()).filter((info) => !info.deleted);
    } catch (err) {
      throw replicaErrorOf(err, `listing ${this.bucket}`);
    }
  }

  /**
   * Takes every object of checkpoint `c` out of the bucket, the manifest first (so that a half-removed checkpoint is
   * never listed), by purging their subjects rather than by the object store's `delete`: a delete leaves a deletion
   * marker per object for ever, so that a publisher pruning after each checkpoint would grow the bucket's stream
   * without bound. Nobody can need those markers: a reader that listed the checkpoint before finds its manifest
   * gone, as after a delete. Throws NATS_ERROR when a subject could not be purged (a later prune tries again).
   */
  private async purgeCheckpoint(c: CheckpointSummary): Promise<void> {
    const manifestName = manifestObject(c.schema, c.id);
    const prefix = checkpointObjects(c.schema, c.id);
    const objects = (await this.objects()).filter((info) => info.name.startsWith(prefix));
    objects.sort((a, b) => Number(b.name === manifestName) - Number(a.name === manifestName));
    const stored = new StoredObjects(this.nc, this.bucket, this.timeoutMs);
    for (const info of objects) {
      stored.attempt(info.name);
      stored.stored(info);
    }
    const failure = await stored.purge();
    if (failure !== undefined)
      throw new ReplicaError('HEAPLESS_ERR_REPLICA_NATS_ERROR', `removing checkpoint ${c.id}: ${failure}`);
  }
}

/** An object store digest (`SHA-256=` and base64url) in lower-case hex; '' for anything else. */
function digestHex(digest: string): string {
  const prefix = 'SHA-256=';
  if (!digest.startsWith(prefix)) return '';
  const bytes = Buffer.from(digest.slice(prefix.length), 'base64url');
  return bytes.length === 32 ? bytes.toString('hex') : '';
}

/**
 * Files downloaded at once. An engine checkpoint is dozens of tables of a few MiB, each of which costs a few round
 * trips (its info, a consumer) and an fsync before its first byte or after its last; several in flight overlap
 * those waits.
 */
const FILES_IN_FLIGHT = 4;

/**
 * Runs `each` on every item, at most `limit` at once. On the first failure no more are started; the ones running
 * are waited for, and that failure is thrown.
 */
async function inParallel<T>(items: readonly T[], limit: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await each(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.err;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
