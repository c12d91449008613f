/**
 * The local side of checkpoint transfer: the files of a directory as streams that hash themselves while they are
 * read (upload), and an object's bytes written to a new file while they are counted (download; their SHA-256 is
 * checked by the object store against the digest the manifest names), so that each file is read or written once.
 */
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { type FileHandle, lstat, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReadableStreamReadResult } from 'node:stream/web';
import { ReplicaError } from '../errors.js';
import { FRAME_PLAIN_BYTES, FrameDecoder } from './checkpoint-frames.js';
import type { CheckpointFile } from './checkpoint-manifest.js';

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
  if (top === undefined || !top.isDirectory())
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `${dir} is not a directory`);
  const out: LocalFile[] = [];
  const walk = async (absolute: string, prefix: string) => {
    for (const entry of await readdir(absolute, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      const child = join(absolute, entry.name);
      if (entry.isDirectory()) await walk(child, `${path}/`);
      else if (entry.isFile()) out.push({ path, absolute: child, size: (await lstat(child)).size });
      else throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', `${child} is neither a file nor a folder`);
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

/** What {@link writeChecked} does besides writing and counting. */
export interface WriteOptions {
  /** A chunk that does not come within this many ms is UNAVAILABLE. */
  idleMs: number;
  /** Fsync the file before resolving. */
  sync: boolean;
  /** Hash the bytes written and compare with the manifest's SHA-256 (else the source's to check). */
  hash: boolean;
  /** The source is the file's `lz4-frames` form (FORMAT.md), decoded on the way. */
  frames?: boolean;
  /** Every byte written is also pushed into this check, in order (a map image checking itself as it arrives). */
  check?: { push(bytes: Uint8Array): void };
  /**
   * Write around the page cache (O_DIRECT, where the file system allows it): the file's pages are not put in memory
   * now, for a file that is mapped and read in parts later (a map image), so that a download of hundreds of
   * megabytes costs the disk's write speed rather than a first touch of as many megabytes of memory.
   */
  direct?: boolean;
  /** The call that opens the file (fs/promises `open`; a test stands in a file system that refuses O_DIRECT). */
  openFile?: typeof open;
}

/**
 * Writes `source` to the new file `absolute` (which must not exist), counting its bytes: more than `expected.size`
 * or fewer is CHECKPOINT_CORRUPT (`what` names the object). With `options.frames` the source is the file's
 * `lz4-frames` form (FORMAT.md) and is decoded on the way, a damaged frame being CHECKPOINT_CORRUPT. With
 * `options.hash` the SHA-256 of the bytes written must also be `expected.sha256`; without it the bytes are the
 * source's to check. A chunk that does not come within `options.idleMs` is UNAVAILABLE. The file is fsynced before
 * this resolves unless `options.sync` is false. Resolves with whether the file was written around the page cache
 * (`options.direct`, where the file system takes O_DIRECT).
 */
export async function writeChecked(
  source: ReadableStream<Uint8Array>,
  absolute: string,
  expected: CheckpointFile,
  what: string,
  options: WriteOptions,
): Promise<{ direct: boolean }> {
  const { idleMs, sync } = options;
  const reader = source.getReader();
  const hash = options.hash ? createHash('sha256') : undefined;
  let size = 0;
  let out: FileOut | undefined;
  try {
    out = await FileOut.create(absolute, options.direct === true, sync, options.openFile ?? open);
    const file = out;
    // Frames decode into the writer's buffers, each free again once its write is done.
    const decoder = options.frames ? new FrameDecoder(what, () => file.buffer()) : undefined;
    const put = async (value: Uint8Array): Promise<void> => {
      size += value.length;
      if (size > expected.size)
        throw new ReplicaError(
          'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
          `${what}: more than the ${expected.size} bytes of the manifest`,
        );
      hash?.update(value);
      options.check?.push(value);
      await file.append(value);
    };
    for (;;) {
      const { done, value } = await readWithin(reader, idleMs, what);
      if (done) break;
      if (decoder === undefined) await put(value);
      // One frame at a time: the next decodes once a write has freed a buffer for it.
      else for (const plain of decoder.frames(value)) await put(plain);
    }
    decoder?.end();
    if (size !== expected.size)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
        `${what}: ${size} bytes, the manifest says ${expected.size}`,
      );
    await file.end();
    const digest = hash?.digest('hex');
    if (digest !== undefined && digest !== expected.sha256)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT',
        `${what}: SHA-256 ${digest}, the manifest says ${expected.sha256}`,
      );
    if (sync) await file.sync();
    return { direct: file.direct };
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  } finally {
    await out?.close();
  }
}

/**
 * A new file written from its start to its end while the next bytes arrive: each write goes to the thread pool at
 * its offset, up to {@link WRITES_IN_FLIGHT} at once. It lends the buffers frames decode into (`buffer()`) and takes
 * each back once its write is done: memory written over and over stays mapped, where a fresh buffer per frame costs
 * a page fault per 4 KiB (most of the decoding).
 *
 * Direct (O_DIRECT) writes need 4 KiB-aligned memory, offsets and lengths: the buffers are slices of a
 * WebAssembly.Memory (page-aligned: the one aligned allocation JavaScript has); a lent buffer filled whole is written
 * as it is, anything else is copied into one first, and the last block is written padded, then the file cut to its
 * size.
 */
class FileOut {
  /** Buffers free to lend or to copy into (each FRAME_PLAIN_BYTES long). */
  private readonly free: Uint8Array[] = [];
  /** The memory the buffers are slices of: a view of it is a lent buffer. */
  private readonly owned = new Set<ArrayBufferLike>();
  private readonly writes: Promise<unknown>[] = [];
  /** Bytes appended so far. */
  private size = 0;
  /** Direct only: the buffer being filled by copies, and how far (it starts at `size - staged`). */
  private stage: Uint8Array | undefined;
  private staged = 0;
  private flushing: Promise<void> | undefined;
  private unflushed = 0;

  /** `aligned`: the memory of the direct writes' buffers (undefined: plain writes). */
  private constructor(
    private readonly handle: FileHandle,
    aligned: ArrayBuffer | undefined,
    private readonly backgroundSync: boolean,
  ) {
    this.direct = aligned !== undefined;
    if (aligned !== undefined) this.addSlices(aligned);
  }

  /** Whether writes go around the page cache (O_DIRECT). */
  readonly direct: boolean;

  /**
   * Creates `absolute` (it must not exist). `direct` asks for O_DIRECT, and falls back to plain writes where the
   * system or file system has none (tmpfs before Linux 6.6 refuses it) or the runtime cannot give the aligned
   * buffers. `sync`: flush written pages every {@link BACKGROUND_SYNC_BYTES} while writing, so that the final fsync
   * does not wait for all of them.
   */
  static async create(absolute: string, direct: boolean, sync: boolean, openFile = open): Promise<FileOut> {
    const O_DIRECT = fsConstants.O_DIRECT;
    // Enough for every write in flight, the buffer being staged, and the one a frame decodes into; made before the
    // file, so that memory the runtime cannot give (no WebAssembly, an address-space limit) means plain writes.
    const aligned = direct && O_DIRECT !== undefined ? alignedMemory(WRITES_IN_FLIGHT + 2) : undefined;
    if (aligned !== undefined) {
      const { O_WRONLY, O_CREAT, O_EXCL } = fsConstants;
      try {
        return new FileOut(await openFile(absolute, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT!, 0o666), aligned, false);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
        // Refused once the file was made: it is this download's, and empty.
        await rm(absolute, { force: true });
      }
    }
    return new FileOut(await openFile(absolute, 'wx'), undefined, sync);
  }

  /** A free buffer of FRAME_PLAIN_BYTES for the next frame to decode into (a new one if none is free). */
  buffer(): Uint8Array {
    if (this.free.length === 0) {
      // Not with direct writes, whose buffers cover every write in flight (see `create`), unless a caller holds on.
      const more = this.direct ? alignedMemory(1) : new ArrayBuffer(FRAME_PLAIN_BYTES);
      if (more === undefined) throw new Error('no memory for another aligned buffer of a direct write');
      this.addSlices(more);
    }
    return this.free.pop()!;
  }

  /** Appends `bytes`; resolves once it may be given more (the write itself may still be in flight). */
  async append(bytes: Uint8Array): Promise<void> {
    const lent = this.lentBuffer(bytes);
    // A direct write takes a whole lent buffer at a whole-buffer offset (nothing staged) as it is: it is aligned.
    const whole = lent !== undefined && bytes.byteOffset === lent.byteOffset && bytes.length === lent.length;
    if (!this.direct || (this.staged === 0 && whole)) {
      await this.submit(bytes, this.size, lent);
      this.size += bytes.length;
      return;
    }
    for (let at = 0; at < bytes.length; ) {
      if (this.stage === undefined) this.stage = await this.freeBuffer();
      const n = Math.min(FRAME_PLAIN_BYTES - this.staged, bytes.length - at);
      this.stage.set(bytes.subarray(at, at + n), this.staged);
      this.staged += n;
      this.size += n;
      at += n;
      if (this.staged === FRAME_PLAIN_BYTES) {
        const full = this.stage;
        this.stage = undefined;
        this.staged = 0;
        await this.submit(full, this.size - FRAME_PLAIN_BYTES, full);
      }
    }
    if (lent !== undefined) this.free.push(lent);
  }

  /** Writes what is staged (padded to 4 KiB, the file then cut to its size) and waits for every write. */
  async end(): Promise<void> {
    if (this.stage !== undefined && this.staged > 0) {
      const padded = Math.ceil(this.staged / DIRECT_ALIGN) * DIRECT_ALIGN;
      const last = this.stage;
      last.fill(0, this.staged, padded);
      this.stage = undefined;
      await this.submit(last.subarray(0, padded), this.size - this.staged, last);
      this.staged = 0;
    }
    await Promise.all(this.writes.splice(0));
    if (this.direct) await this.handle.truncate(this.size);
  }

  sync(): Promise<void> {
    return this.handle.sync();
  }

  /** Waits for every write and flush (whatever their outcome), and closes the file. */
  async close(): Promise<void> {
    await Promise.allSettled(this.writes);
    await this.flushing;
    await this.handle.close();
  }

  /** Writes `bytes` at `at` in the background; `lent` (the buffer they are in) is free again once written. */
  private async submit(bytes: Uint8Array, at: number, lent: Uint8Array | undefined): Promise<void> {
    // One pwrite: a short one (a disk filling up) must fail the file, not leave a gap the final truncate hides.
    let write: Promise<unknown> = this.handle.write(bytes, 0, bytes.length, at).then(({ bytesWritten }) => {
      if (bytesWritten !== bytes.length)
        throw Object.assign(new Error(`short write: ${bytesWritten} of ${bytes.length} bytes at ${at}`), {
          code: 'EIO',
          syscall: 'write',
        });
    });
    if (lent !== undefined) write = write.finally(() => this.free.push(lent));
    write.catch(() => {}); // awaited later; meanwhile a failure must not count as unhandled
    this.writes.push(write);
    if (this.writes.length >= WRITES_IN_FLIGHT) await this.writes.shift();
    this.unflushed += bytes.length;
    if (this.backgroundSync && this.unflushed >= BACKGROUND_SYNC_BYTES && this.flushing === undefined) {
      this.unflushed = 0;
      // Its failure is the final sync's to report; it is awaited before the handle closes in any case.
      this.flushing = this.handle.datasync().then(
        () => {
          this.flushing = undefined;
        },
        () => {
          this.flushing = undefined;
        },
      );
    }
  }

  /** A free buffer, once a write in flight has given one back if none is free now. */
  private async freeBuffer(): Promise<Uint8Array> {
    while (this.free.length === 0 && this.writes.length > 0) await this.writes.shift();
    return this.buffer();
  }

  /** The lent buffer `bytes` is a view of, or undefined. */
  private lentBuffer(bytes: Uint8Array): Uint8Array | undefined {
    if (!this.owned.has(bytes.buffer)) return undefined;
    const start = Math.floor(bytes.byteOffset / FRAME_PLAIN_BYTES) * FRAME_PLAIN_BYTES;
    return new Uint8Array(bytes.buffer, start, FRAME_PLAIN_BYTES);
  }

  /** Adds the FRAME_PLAIN_BYTES slices of `memory` as free buffers. */
  private addSlices(memory: ArrayBuffer): void {
    this.owned.add(memory);
    for (let at = 0; at + FRAME_PLAIN_BYTES <= memory.byteLength; at += FRAME_PLAIN_BYTES)
      this.free.push(new Uint8Array(memory, at, FRAME_PLAIN_BYTES));
  }
}

/**
 * `count` buffers' worth of page-aligned memory (a WebAssembly.Memory's, the one aligned allocation JavaScript has),
 * or undefined where the runtime has no WebAssembly or cannot reserve the memory.
 */
function alignedMemory(count: number): ArrayBuffer | undefined {
  if (WasmMemory === undefined) return undefined;
  const pages = Math.ceil((count * FRAME_PLAIN_BYTES) / WASM_PAGE_BYTES);
  try {
    return new WasmMemory({ initial: pages, maximum: pages }).buffer;
  } catch {
    return undefined; // RangeError: the address space for it is not there (ulimit -v)
  }
}

/** The alignment of O_DIRECT offsets, lengths and memory: the logical block size of any disk, and the page size. */
const DIRECT_ALIGN = 4096;
/** WebAssembly's page: its memories come in multiples of it. */
const WASM_PAGE_BYTES = 64 * 1024;
/**
 * The part of WebAssembly.Memory used here (this project's lib settings carry no WebAssembly types); undefined where
 * the runtime has no WebAssembly (`node --jitless`), and then files are written through the page cache.
 */
const WasmMemory = (
  globalThis as unknown as {
    WebAssembly?: { Memory: new (size: { initial: number; maximum: number }) => { buffer: ArrayBuffer } };
  }
).WebAssembly?.Memory;

/** One read of `reader`, or UNAVAILABLE when nothing comes within `ms`. */
async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  ms: number,
  what: string,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ReplicaError('HEAPLESS_ERR_REPLICA_UNAVAILABLE', `${what}: no data for ${ms} ms`)),
      ms,
    );
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
