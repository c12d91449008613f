/**
 * The write-ahead log of the live memtable, with group commit.
 *
 * `append` only copies the record into the log's buffer: no system call, no threadpool hop, so a write that does not
 * ask for `sync` costs a memcpy and a CRC. The buffer reaches the file once per event-loop turn (a setImmediate) or
 * as soon as it holds FLUSH_THRESHOLD bytes, in one write(2). Writers that ask for `sync` wait for the next sync
 * round: one fdatasync on the libuv threadpool covers every byte written before it started, so all sync writers of a
 * turn share one write and one fdatasync, and the event loop keeps running meanwhile. A sync waiter resolves only
 * after an fdatasync that started after its bytes were written.
 *
 * A crash loses at most the bytes still in the buffer or in the page cache: a suffix of the writes, never a write in
 * the middle. The next log's syncs wait for this log's final sync (`previous` in the constructor), so that suffix
 * property holds across log files too.
 *
 * Ownership: the WalWriter owns its LogWriter; `close()` writes, syncs and closes it and clears its timer.
 */
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EngineError, ErrorCodes } from './errors.js';
import { LogWriter } from './log-writer.js';

/** Pending bytes that trigger an immediate write(2), so a long synchronous burst of writes does not buffer without bound. */
const FLUSH_THRESHOLD = 1024 * 1024;

async function syncDirectoryAsync(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw new EngineError(ErrorCodes.IO, `syncing directory ${dir} failed: ${(err as Error).message}`, { cause: err });
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class WalWriter {
  readonly number: number;
  private readonly log: LogWriter;
  private scheduled: NodeJS.Immediate | undefined;
  /** Sync writers whose bytes are appended but not yet covered by a started fdatasync. */
  private waiters: Waiter[] = [];
  private syncing = false;
  private closing: Promise<void> | undefined;
  private closeRequested = false;
  private closeDone: (() => void) | undefined;
  private failure: Error | undefined;
  private previous: Promise<void> | undefined;
  private directorySynced = false;
  /** Called once if a write or sync fails; the engine then refuses further writes. */
  private readonly onError: (err: Error) => void;
  private readonly flushTick = (): void => {
    this.scheduled = undefined;
    this.flush();
  };

  /**
   * Creates the log file `path`; or, given `appendAt`, appends to the log there, `appendAt` being its size (a log
   * that ends with a whole record: one recovery replayed and keeps as the live WAL). Throws EngineError IO.
   */
  constructor(
    path: string,
    number: number,
    onError: (err: Error) => void,
    previous?: Promise<void>,
    appendAt?: number,
  ) {
    this.number = number;
    this.log = new LogWriter(path, undefined, appendAt);
    this.onError = onError;
    this.previous = previous;
  }

  get path(): string {
    return this.log.path;
  }

  /** Bytes in the log, written or pending. */
  get size(): number {
    return this.log.size;
  }

  /** Appends one record (`rep[start, end)`); it reaches the file by the end of this event-loop turn. */
  append(rep: Uint8Array, start: number, end: number): void {
    this.log.addRecord(rep, start, end);
    if (this.log.pendingBytes >= FLUSH_THRESHOLD) this.writeNow();
    if (this.scheduled === undefined) this.scheduled = setImmediate(this.flushTick);
  }

  /** Resolves once everything appended so far is on disk (fdatasync). Rejects with the I/O error if that fails. */
  waitForSync(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    // Closing ends with a sync of everything appended.
    if (this.closing) return this.closing;
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      if (this.scheduled === undefined) this.scheduled = setImmediate(this.flushTick);
    });
  }

  /** Hands what is pending to write(2) now (checkpoints copy the file right after). */
  writeNow(): void {
    if (this.failure) return;
    try {
      this.log.writePending();
    } catch (err) {
      this.fail(err as Error);
    }
  }

  private flush(): void {
    this.writeNow();
    if (this.waiters.length > 0 && !this.syncing && !this.failure) void this.syncRound();
    else if (this.closeRequested && !this.syncing) this.finishClose();
  }

  private async syncRound(): Promise<void> {
    this.syncing = true;
    const batch = this.waiters;
    this.waiters = [];
    try {
      if (this.previous) {
        await this.previous;
        this.previous = undefined;
      }
      await this.log.sync();
      if (!this.directorySynced) {
        // The new file's directory entry must be durable too, or a power loss could lose the whole log.
        await syncDirectoryAsync(dirname(this.log.path));
        this.directorySynced = true;
      }
    } catch (err) {
      this.syncing = false;
      for (const w of batch) w.reject(err as Error);
      this.fail(err as Error);
      return;
    }
    this.syncing = false;
    for (const w of batch) w.resolve();
    this.flush();
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
    this.onError(err);
    if (this.closeRequested && !this.syncing) this.finishClose();
  }

  /**
   * Writes what is pending, fdatasyncs the file unless it is empty (waiting for any sync in flight), closes it and
   * clears the timer.
   * Resolves when the file is closed, also after an I/O failure (the failure went to `onError`). Idempotent.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = new Promise<void>((resolve) => {
      this.closeDone = resolve;
    });
    this.closeRequested = true;
    if (this.scheduled !== undefined) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    // A final sync round makes the whole log durable before the next log's syncs proceed. A log that never received a
    // byte has nothing to make durable, not even its directory entry (recovery treats an empty log and a missing one
    // alike), so closing an engine that only read syncs nothing.
    if (this.log.size > 0) this.waiters.push({ resolve: () => {}, reject: () => {} });
    this.flush();
    return this.closing;
  }

  private finishClose(): void {
    if (!this.closeDone) return;
    const done = this.closeDone;
    this.closeDone = undefined;
    try {
      this.log.close();
    } catch (err) {
      this.fail(err as Error);
    }
    // Resolve on the next turn: the fdatasync request that got us here is still counted as active until its
    // callback returns, and callers check that close leaves nothing behind.
    setImmediate(done);
  }
}
