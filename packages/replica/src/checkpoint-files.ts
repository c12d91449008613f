/**
 * The local side of checkpoint transfer: the files of a directory as streams that hash themselves while they are
 * read (upload), and an object's bytes written to a new file while they are counted (download; their SHA-256 is
 * checked by the object store against the digest the manifest names), so that each file is read or written once.
 */
import { createHash } from 'node:crypto';
import { type FileHandle, lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReadableStreamReadResult } from 'node:stream/web';
import { FRAME_PLAIN_BYTES, FrameDecoder } from './checkpoint-frames.js';
import type { CheckpointFile } from './checkpoint-manifest.js';
import { ReplicaError } from './errors.js';

/** Bytes read from a file per chunk: the object store's largest chunk at the default max_payload. */
export const FILE_CHUNK_BYTES = 1024 * 1024;
/**
 * A download flushes what it wrote every this many bytes, in the background while it goes on receiving, so that
 * the final fsync of a large file does not wait for all of it at once (Linux holds gigabytes of dirty pages before
 * it starts writing them back by itself).
 */
const BACKGROUND_SYNC_BYTES = 32 * 1024 * 1024;
/**
 * Writes of a download in flight at once: each chunk is written at its offset on the thread pool while the next
 * one is received, decoded and hashed, instead of the receiving waiting for every write.
 */
const WRITES_IN_FLIGHT = 8;

/** A regular file found under a directory. */
export interface LocalFile {
  /** Relative path, `/`-separated. */
  readonly path: string;
  readonly absolute: string;
  readonly size: number;
}

/**
 * Every regular file under `dir`, folders included, in path order. Throws INVALID_ARGUMENT when `dir` is not a
 * directory or holds a symbolic link or a special file (a checkpoint is plain files).
 */
export async function listFiles(dir: string): Promise<LocalFile[]> {
  const top = await lstat(dir).catch(() => undefined);
  if (top === undefined || !top.isDirectory()) throw new ReplicaError('INVALID_ARGUMENT', `${dir} is not a directory`);
  const out: LocalFile[] = [];
  const walk = async (absolute: string, prefix: string) => {
    for (const entry of await readdir(absolute, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      const child = join(absolute, entry.name);
      if (entry.isDirectory()) await walk(child, `${path}/`);
      else if (entry.isFile()) out.push({ path, absolute: child, size: (await lstat(child)).size });
      else throw new ReplicaError('INVALID_ARGUMENT', `${child} is neither a file nor a folder`);
    }
  };
  await walk(dir, '');
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** A file's bytes as a web stream (what the object store reads), with its size and SHA-256 once read to its end. */
export interface HashedRead {
  readonly stream: ReadableStream<Uint8Array>;
  /** After the stream ended: the bytes read and their SHA-256 in hex. */
  result(): { size: number; sha256: string };
  /** Closes the file; call in any case once the stream is done with. */
  close(): Promise<void>;
}

/** Opens `file` for an upload. */
export async function readHashed(file: LocalFile): Promise<HashedRead> {
  const handle = await open(file.absolute, 'r');
  const hash = createHash('sha256');
  let size = 0;
  let digest: string | undefined;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A fresh buffer per chunk: the object store keeps the chunks it is given until it sends them.
      const buffer = Buffer.allocUnsafe(FILE_CHUNK_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, FILE_CHUNK_BYTES, null);
      if (bytesRead === 0) {
        digest = hash.digest('hex');
        controller.close();
        return;
      }
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      size += bytesRead;
      controller.enqueue(chunk);
    },
  });
  return {
    stream,
    result() {
      if (digest === undefined) throw new Error(`${file.absolute} was not read to its end`);
      return { size, sha256: digest };
    },
    close: () => handle.close(),
  };
}

/**
 * Writes `source` to the new file `absolute` (which must not exist), counting its bytes: more than `expected.size`
 * or fewer is CHECKPOINT_CORRUPT (`what` names the object). With `options.frames` the source is the file's
 * `lz4-frames` form (FORMAT.md) and is decoded on the way, a damaged frame being CHECKPOINT_CORRUPT. With
 * `options.hash` the SHA-256 of the bytes written must also be `expected.sha256`; without it the bytes are the
 * source's to check. A chunk that does not come within `options.idleMs` is UNAVAILABLE. The file is fsynced before
 * this resolves unless `options.sync` is false.
 */
export async function writeChecked(
  source: ReadableStream<Uint8Array>,
  absolute: string,
  expected: CheckpointFile,
  what: string,
  options: { idleMs: number; sync: boolean; hash: boolean; frames?: boolean },
): Promise<void> {
  const { idleMs, sync } = options;
  const reader = source.getReader();
  const hash = options.hash ? createHash('sha256') : undefined;
  // Frames decode into a few buffers used in turn, each free again once its write is done: memory written over
  // and over stays mapped, where a fresh buffer per frame costs a page fault per 4 KiB (most of the decoding).
  const free: Uint8Array[] = [];
  const pooled = new Map<ArrayBufferLike, Uint8Array>();
  const decoder = options.frames
    ? new FrameDecoder(what, () => {
        const buffer = free.pop() ?? new Uint8Array(FRAME_PLAIN_BYTES);
        pooled.set(buffer.buffer, buffer);
        return buffer;
      })
    : undefined;
  let size = 0;
  let handle: FileHandle | undefined;
  let flushing: Promise<void> | undefined;
  let unflushed = 0;
  const writes: Promise<unknown>[] = [];
  try {
    handle = await open(absolute, 'wx');
    const file = handle;
    const put = async (value: Uint8Array): Promise<void> => {
      size += value.length;
      if (size > expected.size)
        throw new ReplicaError('CHECKPOINT_CORRUPT', `${what}: more than the ${expected.size} bytes of the manifest`);
      hash?.update(value);
      // Written while the next chunk arrives: a source's chunk is never reused, a pooled buffer only after this.
      let write: Promise<unknown> = file.write(value, 0, value.length, size - value.length);
      const buffer = pooled.get(value.buffer);
      if (buffer !== undefined) write = write.finally(() => free.push(buffer));
      write.catch(() => {}); // awaited below; meanwhile a failure must not count as unhandled
      writes.push(write);
      if (writes.length >= WRITES_IN_FLIGHT) await writes.shift();
      unflushed += value.length;
      if (sync && unflushed >= BACKGROUND_SYNC_BYTES && flushing === undefined) {
        unflushed = 0;
        // Its failure is the final sync's to report; it is awaited before the handle closes in any case.
        flushing = file.datasync().then(
          () => {
            flushing = undefined;
          },
          () => {
            flushing = undefined;
          },
        );
      }
    };
    for (;;) {
      const { done, value } = await readWithin(reader, idleMs, what);
      if (done) break;
      if (decoder === undefined) await put(value);
      // One frame at a time: the next decodes once a write has freed a buffer for it.
      else for (const plain of decoder.frames(value)) await put(plain);
    }
    decoder?.end();
    await Promise.all(writes.splice(0));
    if (size !== expected.size)
      throw new ReplicaError('CHECKPOINT_CORRUPT', `${what}: ${size} bytes, the manifest says ${expected.size}`);
    const digest = hash?.digest('hex');
    if (digest !== undefined && digest !== expected.sha256)
      throw new ReplicaError('CHECKPOINT_CORRUPT', `${what}: SHA-256 ${digest}, the manifest says ${expected.sha256}`);
    if (sync) await handle.sync();
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  } finally {
    await Promise.allSettled(writes);
    await flushing;
    await handle?.close();
  }
}

/** One read of `reader`, or UNAVAILABLE when nothing comes within `ms`. */
async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  ms: number,
  what: string,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReplicaError('UNAVAILABLE', `${what}: no data for ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fsyncs a directory, so that the names of the files just written in it (or renamed into it) are durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
