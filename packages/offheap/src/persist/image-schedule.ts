/**
 * Periodic map images: a persisted map writes its image not only at close but while it runs — after a number of
 * bytes written, and after a number of seconds with writes — so that an open after a crash loads the newest image
 * and replays only the engine's writes after it (map/map-replay.ts) instead of rebuilding the map by a scan.
 *
 * One image, in order (each step crash safe, see FORMAT.md §10):
 *
 *   0. freeze the engine's memtable (a flush, awaited at the end): the writes before the image go to a level-0
 *      table, so that an open after a crash replays into the memtable only what followed the image, not the rest of
 *      a memtable of writes the image already holds (the flush rotates the WAL: the tag below opens the new one)
 *   1. put a fresh 16-byte id under the map's `image` meta key, with sync: this write, at sequence S, tags the image
 *   2. capture: the map's memory (index table, arena segments, allocation state) written to MAPIMAGE.tmp with the
 *      header naming id and S — synchronously, so no write of the map falls in the middle; this is the writer's pause
 *   3. once the tag is fsynced: fsync MAPIMAGE.tmp, rename it over MAPIMAGE, fsync the directory
 *   4. move the engine's WAL pin to S - 1 (`retainWalAfter`): the logs the previous image needed may go
 *   5. wait for the flush of step 0
 *
 * A kill before 3's rename leaves the previous image and the logs it needs (the pin still holds them); after it, the
 * new image, whose tag and every write before it are in the WAL. A torn MAPIMAGE.tmp is never read.
 */
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidArgument } from '../errors.js';
import { IMAGE_FILE, IMAGE_TEMP_FILE, writeImageFile } from './image.js';
import type { ImageContent } from './image-header.js';
import { type EnginePersistence, IMAGE_KEY } from './persistence.js';

/** When a running map writes its image: after `bytes` bytes of keys and values written, or `seconds` (0: never). */
export interface ImageEvery {
  readonly bytes: number;
  readonly seconds: number;
}

/** Defaults: an image per 64 MiB written or per minute with writes. */
const DEFAULT_EVERY: ImageEvery = { bytes: 64 * 1024 * 1024, seconds: 60 };

/** The map's `imageEvery` option, checked (INVALID_ARGUMENT); `false` is neither trigger (`writeImage()` only). */
export function imageEveryOf(option: Partial<ImageEvery> | false | undefined): ImageEvery {
  if (option === false) return { bytes: 0, seconds: 0 };
  if (option !== undefined && (typeof option !== 'object' || option === null)) {
    throw invalidArgument('imageEvery is { bytes?, seconds? } or false');
  }
  const bytes = option?.bytes ?? DEFAULT_EVERY.bytes;
  const seconds = option?.seconds ?? DEFAULT_EVERY.seconds;
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw invalidArgument('imageEvery.bytes must be an integer ≥ 0');
  if (typeof seconds !== 'number' || !(seconds >= 0) || seconds > 86_400 * 365) {
    throw invalidArgument('imageEvery.seconds must be a number ≥ 0');
  }
  return { bytes, seconds };
}

/** What the schedule needs of the map: whether an image can be taken now, and its memory as image content. */
export interface ImageSource {
  /** False while the image cannot be taken (the index grows under a parallel scan): tried again later. */
  ready(): boolean;
  capture(id: Uint8Array, sequence: number): { content: ImageContent; segmentBytes: (i: number) => number };
}

/** Counters of the periodic images, for `stats()` and benchmarks. */
export interface ImageScheduleStats {
  /** Images written since open (periodic and for checkpoints; not the one at close). */
  written: number;
  failed: number;
  /** Milliseconds the last capture held the writer (step 2), and the longest. */
  lastPauseMs: number;
  maxPauseMs: number;
}

export class ImageSchedule {
  readonly stats: ImageScheduleStats = { written: 0, failed: 0, lastPauseMs: 0, maxPauseMs: 0 };
  private readonly timer: NodeJS.Timeout | null;
  private running: Promise<void> | null = null;
  private held = 0;
  private closed = false;
  private queued = false;
  /** The bytes trigger fired (persistence disarmed it: `rearm` arms it again once an image was tried). */
  private readonly due = (): void => {
    if (this.queued) return;
    this.queued = true;
    // After the write that crossed the threshold has returned: the map is whole again.
    queueMicrotask(this.tick);
  };
  private readonly tick = (): void => {
    this.queued = false;
    if (this.held === 0) void this.writeNow();
  };

  constructor(
    private readonly persistence: EnginePersistence,
    private readonly dir: string,
    private readonly every: ImageEvery,
    private readonly source: ImageSource,
  ) {
    if (every.bytes > 0) persistence.onBytes(every.bytes, this.due);
    this.timer = every.seconds > 0 ? setInterval(this.tick, every.seconds * 1000) : null;
    this.timer?.unref();
  }

  /** The engine sequence of the newest image on disk (loaded at open or written since; -1: none). */
  get imageSequence(): number {
    return this.persistence.imageSequence;
  }

  /**
   * Writes an image now unless one is running (then waits for it) or nothing was written since the last one.
   * Resolves to true when an image of the map's state as of the call, or later, is on disk. Never rejects: a
   * failure is a process warning (HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED) and false.
   */
  async writeNow(): Promise<boolean> {
    try {
      return await this.attempt();
    } finally {
      this.rearm();
    }
  }

  /** The bytes trigger fires again once `every.bytes` more were written (from now). */
  private rearm(): void {
    if (this.every.bytes > 0 && !this.closed) this.persistence.onBytes(this.every.bytes, this.due);
  }

  private async attempt(): Promise<boolean> {
    while (this.running !== null) await this.running;
    if (this.closed) return false;
    const p = this.persistence;
    if (p.failure !== undefined) return false;
    if (p.engine.stats().lastSequence === p.imageSequence) return true;
    if (!this.source.ready()) return false;
    let ok = false;
    this.running = this.write().then(
      () => {
        ok = true;
      },
      (err: unknown) => {
        this.stats.failed++;
        rmSync(join(this.dir, IMAGE_TEMP_FILE), { force: true });
        process.emitWarning(`map image not written: ${String(err)}`, {
          code: 'HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED',
        });
      },
    );
    try {
      await this.running;
    } finally {
      this.running = null;
    }
    return ok;
  }

  /** No periodic image starts until `release()` (a checkpoint needs the image on disk to stay the one it links). */
  async hold(): Promise<void> {
    this.held++;
    while (this.running !== null) await this.running;
  }

  release(): void {
    this.held--;
  }

  /** Stops the schedule (the timer, the trigger) and waits for a running image. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.persistence.cancelOnBytes();
    while (this.running !== null) await this.running;
  }

  private async write(): Promise<void> {
    const p = this.persistence;
    const engine = p.engine;
    const id = randomBytes(16);
    // Images come once per many memtables (64 MiB against 4 MiB by default): one more flush each costs little.
    const flushed = engine.flush();
    flushed.catch(() => {}); // awaited below, unless a step before throws first
    const tagged = engine.put(IMAGE_KEY, id, { sync: true });
    tagged.catch(() => {}); // awaited below, unless the capture throws first
    const sequence = engine.stats().lastSequence;
    const tmp = join(this.dir, IMAGE_TEMP_FILE);
    const started = performance.now();
    try {
      const { content, segmentBytes } = this.source.capture(id, sequence);
      writeImageFile(tmp, content, segmentBytes);
    } finally {
      const pause = performance.now() - started;
      this.stats.lastPauseMs = pause;
      if (pause > this.stats.maxPauseMs) this.stats.maxPauseMs = pause;
    }
    await tagged;
    await syncPath(tmp, 'r+');
    renameSync(tmp, join(this.dir, IMAGE_FILE));
    await syncPath(this.dir, 'r');
    p.imageWritten(sequence);
    engine.retainWalAfter(sequence - 1);
    await flushed;
    this.stats.written++;
  }
}

/** fsyncs a file or a directory (opened with `flags`), off the event loop. */
async function syncPath(path: string, flags: string): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
