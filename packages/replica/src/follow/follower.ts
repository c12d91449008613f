/**
 * A follower: an `OffHeapMap` that follows a change stream. At open it decides where to start from
 * (start-plan.ts): its local data, the newest checkpoint of its schema in the object store, or the stream's first
 * message. Then it consumes the stream from its position + 1 in order and applies each batch of messages, with the
 * batch's last sequence as the new position, in one atomic `map.batch()`: after `kill -9` the map holds exactly the
 * messages up to its stored position, and a message at or below that position is never applied again.
 *
 * Outages of NATS are waited out (the reader starts over at the next sequence it needs); the map stays readable
 * meanwhile. An error that makes the stream impossible to follow (a purge past the position, a malformed message,
 * another schema) stops the follower: `failure` holds it and writes waiting for a position reject with it.
 */
import { join } from 'node:path';
import { MAP_IMAGE_FILE, type OffHeapMap } from '@heapless/offheap';
import { type ChangeBatch, type ChangeConsumer, consumeChanges } from '../change/change-consumer.js';
import { readStreamPosition, type StreamPosition } from '../change/change-stream.js';
import { durationMs } from '../duration.js';
import { describeError, isReplicaError, ReplicaError } from '../errors.js';
import { Backoff, retry } from '../nats/retry.js';
import { addFollowerMeta } from './follower-meta.js';
import { openFollowerData } from './follower-open.js';
import {
  type FollowerOptions,
  type FollowerSettings,
  type FollowerStart,
  type FollowerStatus,
  followerSettings,
} from './follower-options.js';
import { readIntoMemory } from './local-data.js';
import { type PublishedCheckpoint, publishMapCheckpoint } from './publish-checkpoint.js';

/** Pause before the reader is started again after NATS could not be reached. */
const RESTART_PAUSE_MS = 250;
/** The apply rate is the messages applied over the last window of this length. */
const RATE_WINDOW_MS = 5_000;
/** A failed checkpoint publish (store unreachable, disk full...) is tried again after 1 s, then 2, 4... up to 60 s. */
const CHECKPOINT_RETRY_FIRST_MS = 1_000;
const CHECKPOINT_RETRY_MAX_MS = 60_000;

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
  readonly timer: NodeJS.Timeout | undefined;
}

/**
 * A map following a change stream. Create with {@link Follower.open}; {@link close} stops reading and closes the
 * map (the NATS connection stays the caller's).
 */
export class Follower {
  /** The last sequence applied and durable (what the map's metadata says after a crash). */
  private positionNow: number;
  /** The last sequence applied to the map, its write maybe not durable yet. */
  private appliedNow: number;
  /** The durability of the last batch written. */
  private durable: Promise<void> = Promise.resolve();
  /** The newest sequence the stream is known to hold; undefined until the stream has been heard from. */
  private newestSeen: number | undefined;
  private consumer: ChangeConsumer | undefined;
  private readonly running: Promise<void>;
  private stopping = false;
  private failed: unknown;
  private readonly waiters = new Set<Waiter>();
  /** The apply in flight (or a checkpoint holding the map still), which the next one waits for. */
  private lock: Promise<unknown> = Promise.resolve();
  private appliedTotal = 0;
  private rateWindow: { at: number; applied: number }[] = [];
  private lastCheckpointAt: number;
  private checkpointing: Promise<unknown> | undefined;
  /** The retry of a checkpoint whose publish failed, and the delays of the next ones (doubling up to a limit). */
  private checkpointRetry: NodeJS.Timeout | undefined;
  private readonly checkpointDelays = new Backoff(CHECKPOINT_RETRY_FIRST_MS, CHECKPOINT_RETRY_MAX_MS);
  /** The request for the stream's end after an open that could not ask for it (awaited by close). */
  private learning: Promise<void> | undefined;
  /** The pause before the reader is started again: a fixed one. */
  private readonly restarts = new Backoff(RESTART_PAUSE_MS, RESTART_PAUSE_MS);
  /** Whether the NATS connection is up now (its status events), so that an outage shows before a pull notices. */
  private connected = true;
  private readonly statusEvents: AsyncIterable<{ type: string }> & { stop?: () => void };
  /** The image of a downloaded checkpoint being read into memory (see `warmImage`). */
  private warming: Promise<void> | undefined;
  /** The stream's position as the open read it, for the first reader's check (later ones ask again); then undefined. */
  private streamAtOpen: StreamPosition | undefined;

  private constructor(
    /** The map followed; readable by anyone, written only by the follower. Closed by {@link close}. */
    readonly map: OffHeapMap<string, unknown>,
    private readonly options: FollowerSettings,
    /** How the follower started. */
    readonly start: FollowerStart,
    stream: StreamPosition | undefined,
  ) {
    this.positionNow = start.position;
    this.appliedNow = start.position;
    this.lastCheckpointAt = start.position;
    this.newestSeen = stream === undefined ? undefined : Math.max(stream.lastSeq, start.position);
    this.streamAtOpen = stream;
    this.statusEvents = options.nc.status();
    void this.watchConnection();
    this.running = this.run();
    if (start.mapImageCheck === 'stream') this.warming = this.warmImage();
  }

  /**
   * Opens the local data, decides how to start (see start-plan.ts), loads a checkpoint or drops the data if that is
   * the decision, and starts consuming; or, given `localMap`, takes that open map over and resumes from its stored
   * position. Resolves once consuming has started (not once caught up: see {@link waitCaughtUp}). Throws
   * INVALID_ARGUMENT (bad options, a directory with records but no follower metadata, a `localMap` of another
   * schema or stream), POSITION_PURGED (the stream lost what follows, and there is no checkpoint or the map is a
   * `localMap`), POSITION_AHEAD, UNAVAILABLE (no usable local data and NATS cannot be reached),
   * CHECKPOINT_CORRUPT, the map's open errors. A `localMap` stays the caller's when this throws.
   */
  static async open(options: FollowerOptions): Promise<Follower> {
    const settings = followerSettings(options);
    const opened = await openFollowerData(settings);
    return new Follower(opened.map, settings, opened.start, opened.stream);
  }

  /** The last stream sequence applied (and stored with the records). */
  get position(): number {
    return this.positionNow;
  }

  /** The error that stopped the follower, or undefined while it follows. */
  get failure(): unknown {
    return this.failed;
  }

  /** The follower's state now. */
  status(): FollowerStatus {
    const lastError = this.consumer?.lastError;
    const lag = this.newestSeen === undefined ? null : Math.max(0, this.newestSeen - this.positionNow);
    return {
      stream: this.options.stream,
      schema: this.options.schema,
      position: this.positionNow,
      lag,
      caughtUp:
        lag === 0 &&
        this.connected &&
        this.consumer !== undefined &&
        lastError === undefined &&
        this.failed === undefined,
      applyRate: this.applyRate(),
      applied: this.appliedTotal,
      lastError: this.connected
        ? lastError === undefined
          ? null
          : describeError(lastError)
        : 'disconnected from NATS',
      failure: this.failed === undefined ? null : describeError(this.failed),
      start: this.start,
    };
  }

  /** Records that the stream holds `seq` (a write-through publish's acknowledgement), for the lag. */
  noteSequence(seq: number): void {
    if (this.newestSeen === undefined || seq > this.newestSeen) this.newestSeen = seq;
  }

  /**
   * Resolves once sequence `seq` is applied (and durable at the map's level). Rejects with UNAVAILABLE when that
   * does not happen within `timeoutMs`, with the follower's failure if it stopped, with CLOSED on close, and with
   * INVALID_ARGUMENT for a `timeoutMs` that is not an integer from 1 to 2^31 - 1 (the longest a timer takes).
   */
  waitFor(seq: number, timeoutMs?: number): Promise<void> {
    this.noteSequence(seq);
    if (this.positionNow >= seq) return Promise.resolve();
    if (this.failed !== undefined) return Promise.reject(this.failed);
    if (this.stopping) return Promise.reject(new ReplicaError('HEAPLESS_ERR_REPLICA_CLOSED', 'the follower is closed'));
    return new Promise((resolve, reject) => {
      // Thrown here, the check rejects the promise: a longer delay would fire at once.
      if (timeoutMs !== undefined) durationMs('timeoutMs', timeoutMs);
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.waiters.delete(waiter);
              reject(
                new ReplicaError(
                  'HEAPLESS_ERR_REPLICA_UNAVAILABLE',
                  `message ${seq} is in the stream but was not applied within ${timeoutMs} ms (at ${this.positionNow})`,
                ),
              );
            }, timeoutMs);
      const waiter: Waiter = { seq, resolve, reject, timer };
      this.waiters.add(waiter);
    });
  }

  /**
   * Resolves once the follower has applied everything the stream held when this was called (asking the stream now;
   * with NATS unreachable, what it last said). Rejects as {@link waitFor} (without a timeout unless given).
   */
  async waitCaughtUp(timeoutMs?: number): Promise<void> {
    const now = await readStreamPosition(this.options.nc, this.options.stream).catch(() => undefined);
    await this.waitFor(Math.max(now?.lastSeq ?? 0, this.newestSeen ?? 0), timeoutMs);
  }

  /**
   * Publishes a live checkpoint of the map (taken between two applied batches) to the checkpoint store, and prunes
   * the schema's checkpoints to the newest `keepCheckpoints`. Throws INVALID_ARGUMENT without a store, and the
   * store's errors.
   */
  publishCheckpoint(): Promise<PublishedCheckpoint> {
    const store = this.options.checkpoints;
    if (store === undefined)
      return Promise.reject(new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', 'no checkpoint store'));
    return publishMapCheckpoint(this.map, store, {
      dir: this.options.dir,
      keep: this.options.keepCheckpoints,
      // The engine checkpoint must hold the last batch written: its WAL record, once durable.
      exclusive: (take) =>
        this.exclusive(async () => {
          await this.durable;
          return take();
        }),
    });
  }

  /**
   * Stops reading (a batch being applied finishes and counts), waits for a checkpoint being published, closes the
   * map. Writes waiting for a position reject with CLOSED. Idempotent; never rejects for the reader's errors.
   */
  async close(): Promise<void> {
    if (this.stopping) {
      await this.running;
      return;
    }
    this.stopping = true;
    this.statusEvents.stop?.();
    this.restarts.wake();
    clearTimeout(this.checkpointRetry);
    await this.consumer?.close();
    await this.running;
    await this.learning;
    await this.checkpointing?.catch(() => {});
    await this.lock.catch(() => {});
    await this.durable.catch(() => {});
    this.rejectWaiters(new ReplicaError('HEAPLESS_ERR_REPLICA_CLOSED', 'the follower is closed'));
    await this.warming;
    await this.map.close();
  }

  /**
   * A checkpoint's map image was mapped unread: its pages would come from the disk as they are first touched. Once
   * caught up (catching up comes first), the image is read once in the background, so that reads and the next image
   * of the map find its pages in memory.
   */
  private async warmImage(): Promise<void> {
    try {
      // Caught up with the stream as the open saw it: no request of its own, which a close would wait for.
      await this.waitFor(this.newestSeen ?? 0);
    } catch {
      return; // closed or failed first
    }
    const started = performance.now();
    const bytes = await readIntoMemory(join(this.options.dir, MAP_IMAGE_FILE), () => this.stopping);
    if (!this.stopping)
      this.options.log?.info(
        { bytes, ms: Math.round(performance.now() - started) },
        'checkpoint map image read into memory',
      );
  }

  private async learnStreamEnd(): Promise<void> {
    const now = await readStreamPosition(this.options.nc, this.options.stream).catch(() => undefined);
    if (now !== undefined) this.noteSequence(now.lastSeq);
  }

  private async watchConnection(): Promise<void> {
    try {
      for await (const s of this.statusEvents) {
        if (s.type === 'disconnect') this.connected = false;
        else if (s.type === 'reconnect') this.connected = true;
      }
    } catch {
      // the connection closed: nothing more to watch
    }
  }

  /** Reads the stream until close or a failure that retrying cannot mend. */
  private async run(): Promise<void> {
    try {
      await retry(() => this.consume(), {
        backoff: this.restarts,
        stopped: () => this.stopping || this.failed !== undefined,
        retryable: (err) => isReplicaError(err, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE'),
        onRetry: (err) => this.options.log?.warn({ err: describeError(err) }, 'NATS unreachable: retrying'),
      });
    } catch (err) {
      this.fail(err); // a no-op once stopping
    }
  }

  /** One reader, from the position applied, until it ends (close, or a failure: thrown). */
  private async consume(): Promise<void> {
    const known = this.streamAtOpen;
    this.streamAtOpen = undefined;
    this.consumer = await consumeChanges(this.options.nc, {
      stream: this.options.stream,
      after: this.appliedNow,
      ...(known === undefined ? {} : { streamPosition: known }),
      schema: this.options.schema,
      handler: (batch) => this.exclusive(() => this.apply(batch)),
      maxBatchMessages: this.options.maxBatchMessages,
      ...(this.options.fetchExpiresMs === undefined ? {} : { fetchExpiresMs: this.options.fetchExpiresMs }),
    });
    if (this.stopping) await this.consumer.close();
    // Opened while NATS was unreachable: the lag is unknown until the stream says where it ends.
    if (this.newestSeen === undefined) this.learning ??= this.learnStreamEnd();
    await this.consumer.done;
  }

  /**
   * Applies one batch and its new position in one atomic write; messages at or below the position are skipped. The
   * write is in the map and handed to the engine when this returns; its durability is awaited by the next batch
   * (so the reader decodes the next pull meanwhile, and at most one batch waits for the WAL), and only then does
   * `position` move and do writers waiting for it get their answer.
   */
  private async apply(batch: ChangeBatch): Promise<void> {
    await this.durable;
    const b = this.map.batch();
    let last = this.appliedNow;
    const fresh = batch.messages[0]!.seq > last ? batch.messages : batch.messages.filter((m) => m.seq > last);
    for (const m of fresh) {
      for (const c of m.changes) {
        if (c.type === 'set') b.setBytes(c.key, c.value);
        else b.delete(c.key);
      }
      last = m.seq;
    }
    const applied = fresh.length;
    this.noteSequence(batch.lastSeq + batch.pending);
    if (applied === 0) return;
    this.options.onBatch?.(fresh, b);
    addFollowerMeta(b, last, this.options.schema, this.options.stream);
    const written = b.write();
    this.appliedNow = last;
    this.durable = written.then(() => {
      this.positionNow = last;
      this.appliedTotal += applied;
      this.rateWindow.push({ at: performance.now(), applied });
      this.resolveWaiters();
      this.maybeCheckpoint();
    });
    // A failed write stops the follower even when no batch follows to see it.
    this.durable.catch((err: unknown) => this.fail(err));
  }

  private fail(err: unknown): void {
    if (this.failed !== undefined || this.stopping) return;
    this.failed = err;
    this.options.log?.warn({ err: describeError(err), position: this.positionNow }, 'follower stopped');
    this.rejectWaiters(err);
    void this.consumer?.close();
  }

  /** Runs `f` after the apply or checkpoint in flight, and before the next. */
  private exclusive<T>(f: () => Promise<T>): Promise<T> {
    const run = this.lock.then(f, f);
    this.lock = run.catch(() => {});
    return run;
  }

  private maybeCheckpoint(): void {
    const every = this.options.checkpointEvery;
    if (every === undefined || this.checkpointing !== undefined || this.checkpointRetry !== undefined) return;
    if (this.stopping || this.positionNow - this.lastCheckpointAt < every) return;
    const before = this.lastCheckpointAt;
    this.lastCheckpointAt = this.positionNow;
    this.checkpointing = this.publishCheckpoint()
      .then(
        (p) => {
          this.checkpointDelays.reset();
          this.options.log?.info(
            { id: p.manifest.id, position: p.manifest.position, bytes: p.manifest.totalBytes, pruned: p.pruned },
            'checkpoint published',
          );
        },
        (err: unknown) => {
          // Still owed: tried again after a delay, not after N more messages (which may never come).
          this.lastCheckpointAt = before;
          const delay = this.checkpointDelays.next();
          this.options.log?.warn({ err: describeError(err), retryMs: delay }, 'checkpoint not published');
          if (this.stopping) return;
          this.checkpointRetry = setTimeout(() => {
            this.checkpointRetry = undefined;
            this.maybeCheckpoint();
          }, delay);
        },
      )
      .finally(() => {
        this.checkpointing = undefined;
        // The messages applied while it ran may be N already, and no apply may come to see them (caught up).
        this.maybeCheckpoint();
      });
  }

  private applyRate(): number {
    const now = performance.now();
    while (this.rateWindow.length > 0 && now - this.rateWindow[0]!.at > RATE_WINDOW_MS) this.rateWindow.shift();
    const n = this.rateWindow.reduce((sum, w) => sum + w.applied, 0);
    return n / (RATE_WINDOW_MS / 1000);
  }

  private resolveWaiters(): void {
    for (const w of this.waiters) {
      if (w.seq > this.positionNow) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }

  private rejectWaiters(err: unknown): void {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiters.clear();
  }
}
