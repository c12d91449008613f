/**
 * The write-ahead log of the live memtable, with group commit.
 *
 * `append` only copies the record into the log's buffer: no system call, no threadpool hop. Writers then wait for
 * one of two things. `written()` resolves once a write(2) has handed their bytes to the OS, so that they survive the
 * process being killed: the first caller queues a microtask that writes the whole buffer, so every write appended in
 * the same synchronous run of code (a loop, a batch of requests a server handles in one go) shares one write(2) and
 * one promise, and a writer that awaits each write pays one write(2) per write and no event-loop turn.
 * `waitForSync()` resolves once an fdatasync that started after that write(2) has returned, so that they survive a
 * power loss too: sync rounds run at the end of the event-loop turn (a setImmediate), and all sync writers of a turn
 * share one fdatasync on the libuv threadpool while the event loop keeps running. Whatever is appended reaches the
 * file by the end of the turn in any case, and at once when the buffer holds FLUSH_THRESHOLD bytes.
 *
 * A power loss loses at most what the page cache held: a suffix of the writes. A log writes nothing before the
 * previous log's final fdatasync has returned (`previous` in the constructor; a few milliseconds once per memtable),
 * so the page cache never holds a later log's bytes while an earlier one still has unsynced bytes, and the suffix
 * property holds across log files too.
 *
 * Ownership: the WalWriter owns its RecordWriter; `close()` writes, syncs and closes it and clears its timer.
 */
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ioError } from '../base/errors.js';
import type { RecordWriter } from '../record/record-writer.js';

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
    throw ioError('syncing directory', dir, err);
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

/** The writers of one write(2): one promise for all of them, settled when that write returns. */
class WriteGroup {
  readonly done: Promise<void>;
  resolve!: () => void;
  reject!: (err: Error) => void;
  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

const WRITTEN: Promise<void> = Promise.resolve();

export class WalWriter {
  readonly number: number;
  private readonly log: RecordWriter;
  private scheduled: NodeJS.Immediate | undefined;
  /** Writers waiting for the pending bytes to be handed to write(2); undefined until one asks. */
  private group: WriteGroup | undefined;
  /** Sync writers whose bytes are appended but not yet covered by a started fdatasync. */
  private waiters: Waiter[] = [];
  private syncing = false;
  private closing: Promise<void> | undefined;
  private closeRequested = false;
  private closeDone: (() => void) | undefined;
  private failure: Error | undefined;
  /** True until the previous log is durable: nothing is written meanwhile. */
  private blocked: boolean;
  private directorySynced = false;
  /** The log's size when this writer took it over (a replayed log's bytes). */
  private readonly startSize: number;
  /** Called once if a write or sync fails; the engine then refuses further writes. */
  private readonly onError: (err: Error) => void;
  /** The microtask `written()` queues. */
  private readonly writeTick = (): void => this.writeNow();
  private readonly flushTick = (): void => {
    this.scheduled = undefined;
    this.flush();
  };

  /**
   * The WAL over `log` (a new file, or a replayed log opened to append after its last record), numbered `number`.
   * `previous`: the close of the log before it, which this one waits for before it writes anything. `onError` hears
   * of the first write or sync that fails (the engine then refuses writes). Takes ownership of `log`.
   */
  constructor(log: RecordWriter, number: number, onError: (err: Error) => void, previous?: Promise<void>) {
    this.number = number;
    this.log = log;
    this.startSize = log.size;
    this.onError = onError;
    this.blocked = previous !== undefined;
    // The previous log's close resolves also after a failure (which went to its onError).
    previous?.then(() => {
      this.blocked = false;
      this.flush();
    });
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

  /**
   * Resolves once everything appended so far has been handed to the OS (write(2) returned): it then survives the
   * process being killed, though not a power loss. The write happens in a microtask the first caller queues; every
   * caller until then gets the same promise. Rejects with the I/O error if the write fails.
   */
  written(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.log.pendingBytes === 0) return WRITTEN;
    if (this.group === undefined) {
      this.group = new WriteGroup();
      queueMicrotask(this.writeTick);
    }
    return this.group.done;
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

  /** Hands what is pending to write(2) now, unless the previous log is not durable yet. */
  writeNow(): void {
    if (this.failure || this.blocked) return;
    try {
      this.log.writePending();
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    const group = this.group;
    this.group = undefined;
    group?.resolve();
  }

  private flush(): void {
    if (this.blocked) return; // unblocking flushes
    this.writeNow();
    if (this.waiters.length > 0 && !this.syncing && !this.failure) void this.syncRound();
    else if (this.closeRequested && !this.syncing) this.finishClose();
  }

  private async syncRound(): Promise<void> {
    this.syncing = true;
    const batch = this.waiters;
    this.waiters = [];
    try {
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
    const group = this.group;
    this.group = undefined;
    group?.reject(err);
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
    // A final sync round makes the whole log durable before the next log's syncs proceed. A log that received no byte
    // from this writer has nothing to make durable: a new one not even its directory entry (recovery treats an empty
    // log and a missing one alike), a replayed one's bytes are as durable as the writes that put them there asked (a sync write was synced). So closing an engine that
    // only read syncs nothing.
    if (this.log.size > this.startSize) this.waiters.push({ resolve: () => {}, reject: () => {} });
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
