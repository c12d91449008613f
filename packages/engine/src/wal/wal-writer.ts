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
 * Batches appended in one run of code whose sequences follow on are merged into one record of up to MERGE_LIMIT bytes
 * (LevelDB's write group): the record header, checksum and copy into the block layout are paid once per group, and
 * a recovery reads tens of records where it read thousands. The merged record is one batch (the first's sequence,
 * the sum of the counts): all of it or none survives a torn tail, and none of its writes was acknowledged before its
 * write(2) returned, so that loses only what a crash may lose.
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
import { BATCH_HEADER_SIZE, batchCount, batchSequence } from '../base/batch-header.js';
import { ioError } from '../base/errors.js';
import { HEADER_SIZE } from '../record/record-format.js';
import type { RecordWriter } from '../record/record-writer.js';

/** Pending bytes that trigger an immediate write(2), so a long synchronous burst of writes does not buffer without bound. */
const FLUSH_THRESHOLD = 1024 * 1024;
/** The largest record that merging batches makes; a batch larger than this alone is its own record. */
const MERGE_LIMIT = 256 * 1024;

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

/** Copies `src[start, end)` to `dst[at..)`; a short run by hand, cheaper than making a subarray for set(). */
function copyInto(dst: Uint8Array, at: number, src: Uint8Array, start: number, end: number): void {
  if (end - start <= 64) for (let i = start; i < end; i++) dst[at++] = src[i]!;
  else dst.set(src.subarray(start, end), at);
}

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
  /** The batches appended and not yet made a record: one batch whose count is the sum of theirs (see the top). */
  private stage: Buffer = Buffer.allocUnsafe(0);
  private stageLength = 0;
  /** The sequence after the staged batch's last write (the next one a batch must start at to join it). */
  private stageNext = 0;
  /** The sequence of the first write appended and not yet handed to write(2); -1 when every one was. */
  private unwritten = -1;
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

  /** Bytes in the log, written or pending (a staged batch counted with one record header). */
  get size(): number {
    return this.log.size + (this.stageLength > 0 ? this.stageLength + HEADER_SIZE : 0);
  }

  /** Bytes appended and not yet handed to write(2). */
  private get pendingBytes(): number {
    return this.log.pendingBytes + this.stageLength;
  }

  /**
   * Appends one batch (`rep[start, end)`, sealed with its sequence); it reaches the file by the end of this
   * event-loop turn, merged with the batches appended around it whose sequences follow on.
   */
  append(rep: Uint8Array, start: number, end: number): void {
    const length = end - start;
    const count = batchCount(rep, start);
    const seq = batchSequence(rep, start);
    if (this.unwritten < 0) this.unwritten = seq;
    if (
      this.stageLength > 0 &&
      length >= BATCH_HEADER_SIZE &&
      seq === this.stageNext &&
      this.stageLength + length - BATCH_HEADER_SIZE <= MERGE_LIMIT
    ) {
      const stage = this.reserveStage(length - BATCH_HEADER_SIZE);
      copyInto(stage, this.stageLength, rep, start + BATCH_HEADER_SIZE, end);
      this.stageLength += length - BATCH_HEADER_SIZE;
      stage.writeUInt32LE(batchCount(stage) + count, 8);
    } else {
      this.unstage();
      if (length >= MERGE_LIMIT) this.log.addRecord(rep, start, end);
      else {
        copyInto(this.reserveStage(length), 0, rep, start, end);
        this.stageLength = length;
      }
    }
    this.stageNext = length >= BATCH_HEADER_SIZE ? seq + count : -1; // a record too short to be a batch merges with none
    if (this.pendingBytes >= FLUSH_THRESHOLD) this.writeNow();
    if (this.scheduled === undefined) this.scheduled = setImmediate(this.flushTick);
  }

  /** The stage with room for `more` bytes after its batch. */
  private reserveStage(more: number): Buffer {
    const need = this.stageLength + more;
    if (need > this.stage.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, Math.min(MERGE_LIMIT, this.stage.length * 2), 4096));
      this.stage.copy(grown, 0, 0, this.stageLength);
      this.stage = grown;
    }
    return this.stage;
  }

  /** Makes the staged batch a record in the log's buffer. */
  private unstage(): void {
    if (this.stageLength === 0) return;
    this.log.addRecord(this.stage, 0, this.stageLength);
    this.stageLength = 0;
  }

  /**
   * Resolves once everything appended so far has been handed to the OS (write(2) returned): it then survives the
   * process being killed, though not a power loss. The write happens in a microtask the first caller queues; every
   * caller until then gets the same promise. Rejects with the I/O error if the write fails.
   */
  written(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pendingBytes === 0) return WRITTEN;
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

  /**
   * The sequence of the first write appended and not yet in the file, or -1 when all are: every write before it is in
   * this log's file, none from it on is (a log writes in order).
   */
  get unwrittenFrom(): number {
    return this.unwritten;
  }

  /** Hands what is pending to write(2) now, unless the previous log is not durable yet. */
  writeNow(): void {
    if (this.failure || this.blocked) return;
    try {
      this.unstage();
      this.log.writePending();
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    this.unwritten = -1;
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
    if (this.size > this.startSize) this.waiters.push({ resolve: () => {}, reject: () => {} });
    this.flush();
    return this.closing;
  }

  private finishClose(): void {
    if (!this.closeDone) return;
    const done = this.closeDone;
    this.closeDone = undefined;
    try {
      this.unstage(); // only after a failure is anything still staged: the close tries to write it
      this.log.close();
    } catch (err) {
      this.fail(err as Error);
    }
    // Resolve on the next turn: the fdatasync request that got us here is still counted as active until its
    // callback returns, and callers check that close leaves nothing behind.
    setImmediate(done);
  }
}
