/**
 * Publishing changes to a change stream. One publish is one message (one atomic unit for the followers) with a
 * message id, so that JetStream stores a retried publish once: within one call the publisher retries on its own
 * while JetStream is unreachable or electing a leader, and a caller that retries after an UNAVAILABLE error passes
 * the same `msgId` again. The acknowledgement carries the message's stream sequence.
 */
import type { WriteOp } from '@heapless/client/protocol';
import { type JetStreamClient, jetstream } from '@nats-io/jetstream';
import { type NatsConnection, nuid } from '@nats-io/nats-core';
import { durationMs } from '../duration.js';
import { ReplicaError } from '../errors.js';
import { isUnavailable, replicaErrorOf } from '../nats/nats-errors.js';
import { Backoff, retry } from '../nats/retry.js';
import { encodeChanges } from './change-codec.js';
import {
  type ChangeLimits,
  changeLimits,
  changeSubject,
  checkMsgId,
  checkName,
  checkSchemaId,
  FORMAT_HEADER,
  MSG_ID_HEADER,
  SCHEMA_HEADER,
} from './change-format.js';
import { changeHeaders } from './change-message.js';

/** Pause between two attempts of one publish while JetStream is unavailable: short, a leader election is ~1 s. */
const RETRY_PAUSE_MS = 100;
/**
 * Longest wait for one attempt's acknowledgement before the publish is sent again (same message id, so stored
 * once). nats.js loses the reply of a request written while it was reconnecting, though JetStream stores the
 * message; without this bound such a publish would wait out its whole timeout. A loopback or LAN ack takes ms.
 */
const ATTEMPT_TIMEOUT_MS = 1_000;
/** nats.js's own default for max_payload when the server has not said (it always does once connected). */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Options of a {@link ChangePublisher}. */
export interface PublisherOptions {
  /** The change stream (its acknowledgement must come from this stream). */
  readonly stream: string;
  /** The subject the stream captures; default `heapless.<stream>`. */
  readonly subject?: string;
  /** The schema id of the values published. */
  readonly schema: string;
  /** How long one publish may take, retries included, before it fails with UNAVAILABLE; default 5 s. */
  readonly timeoutMs?: number;
  /** Limits of one message; default the KV actor's (FORMAT.md). */
  readonly limits?: Partial<ChangeLimits>;
}

/** JetStream's acknowledgement of one publish. */
export interface PublishAck {
  /** The message's stream sequence (the first one's, for a duplicate). */
  readonly seq: number;
  /** True when JetStream had already stored a message of this id within its dedup window. */
  readonly duplicate: boolean;
  /** The message id used. */
  readonly msgId: string;
}

/**
 * Publishes change messages to one stream over a connection the caller owns. Create one per stream and schema;
 * {@link close} refuses further publishes (it does not close the connection).
 */
export class ChangePublisher {
  private readonly js: JetStreamClient;
  private readonly stream: string;
  private readonly subject: string;
  private readonly schema: string;
  private readonly timeoutMs: number;
  private readonly limits: ChangeLimits;
  private closed = false;
  /** The fixed pause between two attempts of a publish (no wake: a publish ends by its deadline). */
  private readonly retryPause = new Backoff(RETRY_PAUSE_MS, RETRY_PAUSE_MS);

  /** Throws INVALID_ARGUMENT for a bad stream name, subject, schema id, timeout or limit. */
  constructor(
    private readonly nc: NatsConnection,
    options: PublisherOptions,
  ) {
    this.stream = checkName('a stream name', options.stream);
    this.subject = options.subject ?? changeSubject(this.stream);
    this.schema = checkSchemaId(options.schema);
    this.timeoutMs = durationMs('timeoutMs', options.timeoutMs ?? 5_000);
    this.limits = changeLimits(options.limits);
    this.js = jetstream(nc);
  }

  /**
   * Publishes `changes` as one message and resolves with its acknowledgement once JetStream has stored it (on a
   * replicated stream, on a majority of its replicas). `msgId` defaults to a fresh unique id; pass the id of a
   * failed attempt to retry it. Throws the codec's errors for bad changes (nothing is sent), MESSAGE_TOO_LARGE,
   * UNAVAILABLE when NATS did not acknowledge within `timeoutMs` (the message may or may not be stored: retry with
   * the same id), CLOSED (this publisher or the connection was closed), NATS_ERROR.
   */
  async publish(changes: readonly WriteOp[], options: { msgId?: string } = {}): Promise<PublishAck> {
    if (this.closed) throw new ReplicaError('HEAPLESS_ERR_REPLICA_CLOSED', 'the publisher is closed');
    const msgId = options.msgId === undefined ? nuid.next() : checkMsgId(options.msgId);
    const payload = encodeChanges(changes, this.limits);
    this.checkSize(payload.length, msgId);
    const headers = changeHeaders(this.schema, msgId);
    const deadline = performance.now() + this.timeoutMs;
    const what = `publish ${msgId} to ${this.stream}`;
    try {
      const ack = await retry(
        () =>
          this.js.publish(this.subject, payload, {
            msgID: msgId,
            headers,
            timeout: Math.max(Math.min(Math.ceil(deadline - performance.now()), ATTEMPT_TIMEOUT_MS), 1),
            expect: { streamName: this.stream },
          }),
        {
          backoff: this.retryPause,
          stopped: () => false,
          retryable: (err) =>
            isUnavailable(err) && !this.nc.isClosed() && !this.closed && deadline - performance.now() > RETRY_PAUSE_MS,
        },
      );
      // Never undefined: nothing stops the loop but a success or a failure.
      return { seq: ack!.seq, duplicate: ack!.duplicate, msgId };
    } catch (err) {
      if (this.nc.isClosed())
        throw new ReplicaError('HEAPLESS_ERR_REPLICA_CLOSED', `${what}: the connection is closed`, { cause: err });
      throw replicaErrorOf(err, `${what} within ${this.timeoutMs} ms`);
    }
  }

  /** Refuses further publishes with CLOSED; publishes in flight finish. The connection stays open. */
  close(): void {
    this.closed = true;
  }

  /** MESSAGE_TOO_LARGE unless payload and headers fit the server's max_payload. */
  private checkSize(payloadBytes: number, msgId: string): void {
    const max = this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    // "NATS/1.0\r\n", one "Name: value\r\n" per header, the blank line: what nats.js sends before the payload.
    const headerBytes =
      10 +
      FORMAT_HEADER.length +
      5 +
      SCHEMA_HEADER.length +
      this.schema.length +
      4 +
      MSG_ID_HEADER.length +
      msgId.length +
      4 +
      2;
    if (payloadBytes + headerBytes > max)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_MESSAGE_TOO_LARGE',
        `a message of ${payloadBytes + headerBytes} bytes, the server takes at most ${max} (max_payload)`,
      );
  }
}
