/**
 * Reading a change stream in order from a stored position, in batches, for a follower.
 *
 * The reader owns one ephemeral JetStream consumer at a time (no acks, in memory, one replica, starting at the next
 * sequence wanted) and pulls at most `maxBatchMessages` messages per request, with two requests out so that the server
 * prepares the next while this process works through the current one. It hands the messages to the handler in batches,
 * one call at a time: a whole pull as one batch while the stream holds more (one engine write per pull for a follower
 * catching up, not one per socket read), and what has come as soon as it holds no more. It asks for another pull only
 * once one is used up, so that at most two pulls of messages wait in memory however slow the handler is (backpressure).
 * Every message's stream sequence is checked against the next one expected: an older one (delivered again after a
 * reset) is skipped, a newer one means a message was not delivered, and the reader finds out why: purged
 * (POSITION_PURGED), deleted from the middle (SEQUENCE_GAP), or lost on the way, after which it starts a new consumer
 * at the expected sequence. So the handler sees every sequence once, in order, across disconnects, server restarts and
 * the loss of a cluster node (the consumer is then recreated on a live node), and a handler that resolved is never
 * given its messages again.
 */
import {
  AckPolicy,
  type Consumer,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  ReplayPolicy,
} from '@nats-io/jetstream';
import { type NatsConnection, nanos, nuid } from '@nats-io/nats-core';
import { durationMs } from '../duration.js';
import { ReplicaError, type ReplicaErrorCode } from '../errors.js';
import { replicaErrorOf } from '../nats/nats-errors.js';
import { Backoff, retry } from '../nats/retry.js';
import { type ChangeLimits, changeLimits, checkName, checkSchemaId } from './change-format.js';
import { type ChangeMessage, readChangeMessage } from './change-message.js';
import { assertResumable, checkPosition, readStreamPosition, type StreamPosition } from './change-stream.js';

/** The codes that end a reader: the stream cannot be followed from here on, whatever is retried. */
const FATAL: ReadonlySet<ReplicaErrorCode> = new Set<ReplicaErrorCode>([
  'HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE',
  'HEAPLESS_ERR_REPLICA_BAD_HEADER',
  'HEAPLESS_ERR_REPLICA_UNSUPPORTED_FORMAT',
  'HEAPLESS_ERR_REPLICA_INVALID_KEY',
  'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE',
  'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE',
  'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES',
  'HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH',
  'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
  'HEAPLESS_ERR_REPLICA_POSITION_AHEAD',
  'HEAPLESS_ERR_REPLICA_SEQUENCE_GAP',
  'HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND',
]);
/** Pauses between attempts to get a consumer again while NATS is away: from 50 ms, doubling, at most 2 s. */
const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;
/** An idle server-side consumer is removed this long after its reader went away. */
const INACTIVE_THRESHOLD_MS = 60_000;

/** Messages handed to the handler at once: consecutive sequences, in order. */
export interface ChangeBatch {
  readonly messages: readonly ChangeMessage[];
  /** Sequence of the first message. */
  readonly firstSeq: number;
  /** Sequence of the last message: the position once the batch is applied. */
  readonly lastSeq: number;
  /** Messages the stream held after `lastSeq` when it was delivered (the lag behind the stream's end). */
  readonly pending: number;
}

/** Options of {@link consumeChanges}. */
export interface ConsumeOptions {
  readonly stream: string;
  /** The stored position: the last sequence applied (0 for none). Reading starts at `after + 1`. */
  readonly after: number;
  /** The schema id followed; a message of another ends the reader with SCHEMA_MISMATCH. Default: any. */
  readonly schema?: string;
  /**
   * Called with each batch, one at a time; the next batch waits until it resolves. A handler that throws (or
   * rejects) ends the reader with that error, and the batch does not count as handled.
   */
  readonly handler: (batch: ChangeBatch) => void | Promise<void>;
  /** Most messages per pull request and per batch; default 256. At most twice this many wait in memory. */
  readonly maxBatchMessages?: number;
  /**
   * How long one pull request waits for messages; default 5 s. The server sends heartbeats at half of it, and two
   * missed ones make the reader start over on a new consumer, so this bounds how long a lost node goes unnoticed.
   */
  readonly fetchExpiresMs?: number;
  /**
   * The stream's position as the caller read it a moment ago (a follower's open): the check that the stream holds
   * `after + 1` uses it instead of asking again. A purge since then still shows, when the first message comes.
   */
  readonly streamPosition?: StreamPosition;
  /** JetStream API timeout in ms (consumer creation, stream info); default 5 s. */
  readonly timeoutMs?: number;
  readonly limits?: Partial<ChangeLimits>;
}

/**
 * Starts reading: checks that the stream still holds `after + 1` and starts the reader. Rejects with
 * STREAM_NOT_FOUND, POSITION_PURGED, POSITION_AHEAD, UNAVAILABLE (NATS unreachable now: retry later),
 * INVALID_ARGUMENT. Once started, outages are retried without end; see {@link ChangeConsumer.done}.
 */
export async function consumeChanges(nc: NatsConnection, options: ConsumeOptions): Promise<ChangeConsumer> {
  const settings = readerSettings(options);
  const timeout = settings.timeoutMs;
  if (options.streamPosition !== undefined && options.streamPosition.stream !== settings.stream)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `streamPosition is of stream ${options.streamPosition.stream}, not ${settings.stream}`,
    );
  const stream = options.streamPosition ?? (await readStreamPosition(nc, settings.stream, { timeoutMs: timeout }));
  assertResumable(stream, settings.after);
  const jsm = await jetstreamManager(nc, { checkAPI: false, timeout });
  return new ChangeConsumer(nc, jsm, jetstream(nc, { timeout }), settings);
}

interface ReaderSettings {
  readonly stream: string;
  readonly after: number;
  readonly schema: string | undefined;
  readonly handler: ConsumeOptions['handler'];
  readonly maxBatchMessages: number;
  readonly fetchExpiresMs: number;
  readonly timeoutMs: number;
  readonly limits: ChangeLimits;
}

function readerSettings(options: ConsumeOptions): ReaderSettings {
  checkPosition(options.after);
  if (typeof options.handler !== 'function')
    throw new ReplicaError('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT', 'handler must be a function');
  const positive = (name: string, value: number | undefined, fallback: number, min: number) => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `${name} must be an integer of at least ${min}, got ${value}`,
      );
    return v;
  };
  return {
    stream: checkName('a stream name', options.stream),
    after: options.after,
    schema: options.schema === undefined ? undefined : checkSchemaId(options.schema),
    handler: options.handler,
    maxBatchMessages: positive('maxBatchMessages', options.maxBatchMessages, 256, 1),
    // nats.js heartbeats at half the expiry and takes at least 500 ms between them.
    fetchExpiresMs: durationMs('fetchExpiresMs', options.fetchExpiresMs ?? 5_000, 1_000),
    timeoutMs: durationMs('timeoutMs', options.timeoutMs ?? 5_000),
    limits: changeLimits(options.limits),
  };
}

/**
 * A running reader. `position` is the last sequence whose batch the handler finished; {@link close} stops it.
 * Create with {@link consumeChanges}.
 */
export class ChangeConsumer {
  /** Resolves once the reader stopped through {@link close}; rejects with the error that ended it otherwise. */
  readonly done: Promise<void>;
  private handled: number;
  private next: number;
  private pending = 0;
  private stopping = false;
  /** The pulls out now, oldest first. */
  private readonly pulls: ConsumerMessages[] = [];
  private consumerName: string | undefined;
  private readonly backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS);
  private lastFailure: ReplicaError | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly settings: ReaderSettings,
  ) {
    this.handled = settings.after;
    this.next = settings.after + 1;
    this.done = this.run();
    // The owner may never await `done` (it calls close()); an ending error stays readable there.
    this.done.catch(() => {});
  }

  /** The last sequence handled: where a new reader would start after (`after`). */
  get position(): number {
    return this.handled;
  }

  /**
   * The name of the server-side consumer the reader pulls from now; undefined between two (after a lost node or
   * an outage, before the next is made). For operators looking it up with `nats consumer info`.
   */
  get consumer(): string | undefined {
    return this.consumerName;
  }

  /** Messages after the last delivered one, as the server last said (0 once caught up). */
  get lag(): number {
    return this.pending;
  }

  /**
   * Why the reader last had to start over (NATS unreachable, a lost consumer), while it keeps trying; undefined
   * once a consumer was opened again.
   */
  get lastError(): ReplicaError | undefined {
    return this.lastFailure;
  }

  /**
   * Stops reading: waits for a handler in flight (its batch counts) or a JetStream request in flight (at most
   * `timeoutMs`), then removes the server-side consumer if NATS is there to ask. Never rejects; the error that
   * ended the reader, if any, stays in {@link done}.
   */
  async close(): Promise<void> {
    this.stopping = true;
    for (const p of this.pulls) p.stop();
    this.backoff.wake();
    await this.done.catch(() => {});
  }

  /** Reads until close(), or until a failure that another consumer cannot mend (thrown). */
  private async run(): Promise<void> {
    try {
      await retry(() => this.readOnce(), {
        backoff: this.backoff,
        stopped: () => this.stopping,
        // A handler's failure ends the reader even during close(); anything else then is close() at work.
        retryable: (err) => !(err instanceof HandlerFailure) && (this.stopping || !isFatal(err, this.settings.stream)),
        onRetry: (err) => {
          this.lastFailure = replicaErrorOf(err, `reading stream ${this.settings.stream}`);
          if (this.nc.isClosed()) throw new ConnectionClosed();
        },
      });
    } catch (err) {
      if (err instanceof ConnectionClosed)
        throw new ReplicaError('HEAPLESS_ERR_REPLICA_CLOSED', 'the NATS connection was closed under the reader');
      throw err instanceof HandlerFailure ? err.error : replicaErrorOf(err, `reading stream ${this.settings.stream}`);
    }
  }

  /** One server-side consumer, pulled from until close() or a failure; removed after (if NATS answers). */
  private async readOnce(): Promise<void> {
    try {
      const consumer = await this.openConsumer();
      this.backoff.reset();
      this.lastFailure = undefined;
      await this.pullFrom(consumer);
    } finally {
      await this.dropConsumer();
    }
  }

  /**
   * Pulls until close(), or until the consumer must be replaced or a message cannot be followed (throws). Two pulls
   * are out at once, so that the server prepares the next while this process works through the current one; the
   * next is asked for only once the current one is used up, so at most two pulls of messages wait in memory.
   */
  private async pullFrom(consumer: Consumer): Promise<void> {
    const { maxBatchMessages, fetchExpiresMs } = this.settings;
    const pull = () => consumer.fetch({ max_messages: maxBatchMessages, expires: fetchExpiresMs });
    try {
      this.pulls.push(await pull());
      this.pulls.push(await pull());
      while (!this.stopping) {
        const received = await this.drain(this.pulls[0]!);
        this.pulls.shift()!.stop();
        if (this.stopping) break;
        if (received === 0) await this.checkStream();
        this.pulls.push(await pull());
      }
    } finally {
      for (const p of this.pulls.splice(0)) p.stop();
    }
  }

  /** Hands one pull's messages to the handler, in batches; returns how many messages the pull brought. */
  private async drain(pull: ConsumerMessages): Promise<number> {
    const batch: ChangeMessage[] = [];
    let received = 0;
    for await (const m of pull) {
      received++;
      if (m.seq < this.next) continue; // delivered before a reset: already handed over
      if (m.seq > this.next) {
        await this.deliver(batch);
        await this.explainGap(m.seq);
        // Lost on the way: a new consumer starts at this.next (after the pause of a failure, in case it repeats).
        throw new ReplicaError(
          'HEAPLESS_ERR_REPLICA_NATS_ERROR',
          `message ${this.next} was not delivered (${m.seq} came instead)`,
        );
      }
      try {
        batch.push(readChangeMessage(m.seq, m.headers, m.data, this.settings));
      } catch (err) {
        await this.deliver(batch); // what came before the bad message is fine
        throw err;
      }
      this.next = m.seq + 1;
      this.pending = m.info.pending;
      // While the stream holds more than this pull has handed over, the rest of the pull is on its way: one batch
      // (one engine write) for all of it rather than one per socket read.
      const full = batch.length >= this.settings.maxBatchMessages;
      if (full || (pull.getPending() === 0 && this.pending === 0)) await this.deliver(batch);
      if (this.stopping) break;
    }
    await this.deliver(batch);
    return received;
  }

  /** Hands `batch` to the handler (if it holds anything) and empties it. */
  private async deliver(batch: ChangeMessage[]): Promise<void> {
    if (batch.length === 0) return;
    const messages = batch.splice(0, batch.length);
    const lastSeq = messages[messages.length - 1]!.seq;
    try {
      await this.settings.handler({ messages, firstSeq: messages[0]!.seq, lastSeq, pending: this.pending });
    } catch (err) {
      throw new HandlerFailure(err);
    }
    this.handled = lastSeq;
  }

  /** Message `seq` came when `this.next` was expected: throws if the stream lost `this.next`, else returns. */
  private async explainGap(seq: number): Promise<void> {
    const expected = this.next;
    assertResumable(await this.streamPosition(), expected - 1);
    const stored = await this.jsm.streams.getMessage(this.settings.stream, { seq: expected });
    if (stored === null)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_SEQUENCE_GAP',
        `stream ${this.settings.stream} has no message ${expected} (deleted) but has ${seq}`,
      );
  }

  /** After an idle pull: the stream may have been purged or recreated meanwhile; refresh the lag. */
  private async checkStream(): Promise<void> {
    const stream = await this.streamPosition();
    this.pending = assertResumable(stream, this.next - 1);
  }

  private streamPosition() {
    return readStreamPosition(this.nc, this.settings.stream, { timeoutMs: this.settings.timeoutMs });
  }

  private async openConsumer(): Promise<Consumer> {
    const name = `heapless_${nuid.next()}`;
    this.consumerName = name;
    const info = await this.jsm.consumers.add(this.settings.stream, {
      name,
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.next,
      replay_policy: ReplayPolicy.Instant,
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: nanos(INACTIVE_THRESHOLD_MS),
    });
    // The consumer as its creation described it: asking for its info again (consumers.get) costs a round trip.
    return this.js.consumers.getConsumerFromInfo(info);
  }

  /** Deletes the current server-side consumer, if NATS answers; it expires on its own otherwise. */
  private async dropConsumer(): Promise<void> {
    const name = this.consumerName;
    this.consumerName = undefined;
    if (name === undefined || this.nc.isClosed()) return;
    await this.jsm.consumers.delete(this.settings.stream, name).catch(() => {});
  }
}

/** A handler's error, marked so that the reader ends with it unchanged instead of retrying. */
class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/** The NATS connection found closed after a failure: the reader ends with CLOSED. */
class ConnectionClosed {}

/** Whether `err` ends the reader: the stream cannot be followed from here on, whatever is retried. */
function isFatal(err: unknown, stream: string): boolean {
  return FATAL.has(replicaErrorOf(err, `reading stream ${stream}`).code);
}
