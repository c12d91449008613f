/**
 * Checkpoints shared through a JetStream object store bucket (FORMAT.md, "Checkpoints"). A checkpoint is a
 * directory uploaded as one object per file plus a manifest (position, schema id, sizes, SHA-256), the manifest
 * last, so that a checkpoint is listed only once all of it is there. A download goes into a new directory beside
 * the destination, checks every byte against the manifest, and is renamed into place only when all is well:
 * nothing half-installed is ever at the destination.
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { nuid } from '@nats-io/nats-core';
import { type ObjectInfo, type ObjectStore, Objm, StorageType, setSha256Backend } from '@nats-io/obj';
import { checkName, checkSchemaId } from './change-format.js';
import { checkPosition, readStreamPosition } from './change-stream.js';
import { FILE_CHUNK_BYTES, listFiles, readHashed, syncDir, writeChecked } from './checkpoint-files.js';
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
import { ReplicaError } from './errors.js';
import { replicaErrorOf } from './nats-errors.js';

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

/** What an upload records about the files. */
export interface UploadOptions {
  /** The schema id of the values in the files. */
  readonly schema: string;
  /** The stream position the files are at. */
  readonly position: number;
  /** The change stream the position belongs to, recorded in the manifest. */
  readonly stream?: string;
}

/** One bucket of checkpoints over a connection the caller owns. Create with {@link CheckpointStore.open}. */
export class CheckpointStore {
  private constructor(
    private readonly store: ObjectStore,
    /** The bucket's name. */
    readonly bucket: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Opens (by default creating) the bucket. Throws INVALID_ARGUMENT, CHECKPOINT_NOT_FOUND (missing and `create:
   * false`), UNAVAILABLE, NATS_ERROR.
   */
  static async open(nc: NatsConnection, options: CheckpointStoreOptions): Promise<CheckpointStore> {
    const bucket = checkName('a bucket name', options.bucket);
    const timeoutMs = options.timeoutMs ?? 30_000;
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
      return new CheckpointStore(store, bucket, timeoutMs);
    } catch (err) {
      const mapped = replicaErrorOf(err, `bucket ${bucket}`);
      if (mapped.code === 'STREAM_NOT_FOUND') throw new ReplicaError('CHECKPOINT_NOT_FOUND', mapped.message);
      throw mapped;
    }
  }

  /**
   * Uploads every file under `dir` as a checkpoint at `options.position`, the manifest last. The files must not
   * change meanwhile (use a checkpoint directory, not a live store). Returns the manifest. Throws INVALID_ARGUMENT
   * (not a directory, a link or special file in it, a file that changed under the upload), UNAVAILABLE,
   * NATS_ERROR; after a failure the objects already stored are removed (best effort: without a manifest they are
   * never listed anyway).
   */
  async upload(dir: string, options: UploadOptions): Promise<CheckpointManifest> {
    const schema = checkSchemaId(options.schema);
    checkPosition(options.position);
    if (options.stream !== undefined) checkName('a stream name', options.stream);
    const id = checkpointId(options.position, nuid.next());
    const local = await listFiles(dir);
    const files: CheckpointFile[] = [];
    try {
      for (const file of local) {
        const read = await readHashed(file);
        try {
          const name = fileObject(schema, id, file.path);
          await this.store.put({ name, options: { max_chunk_size: FILE_CHUNK_BYTES } }, read.stream, {
            timeout: this.timeoutMs,
          });
          const { size, sha256 } = read.result();
          if (size !== file.size)
            throw new ReplicaError('INVALID_ARGUMENT', `${file.absolute} changed during the upload`);
          files.push({ path: file.path, size, sha256 });
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
      await this.store.putBlob({ name: manifestObject(schema, id) }, encodeManifest(manifest), {
        timeout: this.timeoutMs,
      });
      return manifest;
    } catch (err) {
      await this.removeObjects(checkpointObjects(schema, id)).catch(() => {});
      throw replicaErrorOf(err, `upload of ${dir} to ${this.bucket}`);
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
    if (bytes === null) throw new ReplicaError('CHECKPOINT_NOT_FOUND', `no checkpoint ${name} in ${this.bucket}`);
    return decodeManifest(bytes, checkpoint);
  }

  /**
   * Downloads a checkpoint into the directory `dest`, which must not exist (its parent must). The files are written
   * into a new sibling directory, each checked for its size and SHA-256 and fsynced, and that directory is renamed
   * to `dest` only when every file is right; on any failure it is removed and `dest` is left absent. Returns the
   * manifest. Throws INVALID_ARGUMENT (`dest` exists, or its folder does not), CHECKPOINT_NOT_FOUND, CHECKPOINT_CORRUPT (a malformed
   * manifest, a missing object, a size or checksum that differs), UNAVAILABLE.
   */
  async download(checkpoint: { schema: string; id: string }, dest: string): Promise<CheckpointManifest> {
    if (await exists(dest)) throw new ReplicaError('INVALID_ARGUMENT', `${dest} exists: a download makes it`);
    if (!(await exists(dirname(dest))))
      throw new ReplicaError('INVALID_ARGUMENT', `${dirname(dest)}, the folder of ${dest}, does not exist`);
    const manifest = await this.manifest(checkpoint);
    const partial = join(dirname(dest), `.${manifest.id}.partial-${nuid.next()}`);
    await mkdir(partial);
    try {
      for (const file of manifest.files) await this.downloadFile(manifest, file, partial);
      await syncDir(partial);
      await rename(partial, dest);
      await syncDir(dirname(dest));
      return manifest;
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      throw err;
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
      throw new ReplicaError('INVALID_ARGUMENT', `keep must be a positive integer, got ${keep}`);
    let candidates = await this.list(schema);
    if (options.stream !== undefined) {
      const ofStream: CheckpointSummary[] = [];
      for (const c of candidates) {
        const manifest = await this.manifest(c).catch((err: unknown) => {
          if (err instanceof ReplicaError && err.code === 'CHECKPOINT_NOT_FOUND') return undefined; // pruned meanwhile
          throw err;
        });
        if (manifest?.stream === options.stream) ofStream.push(c);
      }
      candidates = ofStream;
    }
    const removed: string[] = [];
    for (const old of candidates.slice(keep)) {
      try {
        await this.store.delete(manifestObject(old.schema, old.id));
      } catch (err) {
        throw replicaErrorOf(err, `removing checkpoint ${old.id}`);
      }
      await this.removeObjects(checkpointObjects(old.schema, old.id));
      removed.push(old.id);
    }
    return removed;
  }

  private async downloadFile(manifest: CheckpointManifest, file: CheckpointFile, into: string): Promise<void> {
    const name = fileObject(manifest.schema, manifest.id, file.path);
    let result: Awaited<ReturnType<ObjectStore['get']>>;
    try {
      result = await this.store.get(name);
    } catch (err) {
      throw this.readError(err, name);
    }
    if (result === null) throw new ReplicaError('CHECKPOINT_CORRUPT', `${name}: the manifest names it, it is missing`);
    if (result.info.size !== file.size) {
      await result.data.cancel().catch(() => {});
      throw new ReplicaError(
        'CHECKPOINT_CORRUPT',
        `${name}: ${result.info.size} bytes stored, the manifest says ${file.size}`,
      );
    }
    const absolute = join(into, ...file.path.split('/'));
    await mkdir(dirname(absolute), { recursive: true });
    try {
      await writeChecked(result.data, absolute, file, name, this.timeoutMs);
    } catch (err) {
      throw this.readError(err, name);
    }
  }

  /** A read's failure: the object store's own digest check is corruption; anything else is mapped as usual. */
  private readError(err: unknown, name: string): ReplicaError {
    // nats.js says so only in the message of a plain Error, at the end of an object whose chunks differ.
    if (err instanceof Error && !(err instanceof ReplicaError) && /digests do not match|corrupt/.test(err.message))
      return new ReplicaError('CHECKPOINT_CORRUPT', `${name}: ${err.message}`, { cause: err });
    return replicaErrorOf(err, `reading ${name} from ${this.bucket}`);
  }

  private async objects(): Promise<ObjectInfo[]> {
    try {
      return (await this.store.list()).filter((info) => !info.deleted);
    } catch (err) {
      throw replicaErrorOf(err, `listing ${this.bucket}`);
    }
  }

  private async removeObjects(prefix: string): Promise<void> {
    for (const info of await this.objects()) {
      if (!info.name.startsWith(prefix)) continue;
      try {
        await this.store.delete(info.name);
      } catch (err) {
        throw replicaErrorOf(err, `removing ${info.name}`);
      }
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
