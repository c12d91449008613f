/**
 * The write sink of a following server: a write goes to the change stream as one message (JetStream publish with
 * a message id, so a publish retried inside the publisher is stored once), and is answered once this server's
 * follower has applied that message's sequence, so that a client reads its own writes on the server it wrote to.
 * Failures become the wire's codes: `UNAVAILABLE` when the log cannot be reached or the write is not applied
 * within the timeout, `BATCH_TOO_LARGE` for a write no message can hold.
 */
import { randomUUID } from 'node:crypto';
import { HeaplessError } from '@heapless/client/protocol';
import { type ChangePublisher, DEFAULT_CHANGE_LIMITS, type Follower, isReplicaError } from '@heapless/replica';
import type { SinkOp, WriteSink } from '../kv/write-sink.js';

export class LogWriteSink implements WriteSink {
  /** A change message holds at most this many changes (FORMAT.md of packages/replica). */
  readonly maxOps = DEFAULT_CHANGE_LIMITS.maxChanges;
  /** This process's message ids: `<unique prefix>-<counter>`, so ids never repeat across servers or restarts. */
  readonly #idPrefix = randomUUID();
  #count = 0;

  constructor(
    private readonly publisher: ChangePublisher,
    private readonly follower: Follower,
    private readonly timeoutMs: number,
  ) {}

  async write(ops: readonly SinkOp[]): Promise<{ sequence: number }> {
    // A follower that stopped would never apply the write: do not put it in the log for the others alone.
    const failure = this.follower.failure;
    if (failure !== undefined) throw wireError(failure, 'this server stopped following its change stream');
    const started = performance.now();
    let seq: number;
    try {
      seq = (await this.publisher.publish(ops, { msgId: `${this.#idPrefix}-${++this.#count}` })).seq;
    } catch (err) {
      throw wireError(err, 'the write was not stored in the change log');
    }
    const left = Math.max(1, Math.round(this.timeoutMs - (performance.now() - started)));
    try {
      await this.follower.waitFor(seq, left);
    } catch (err) {
      throw wireError(err, `the write is message ${seq} of the change log, not applied here yet`);
    }
    return { sequence: seq };
  }
}

/** A replica error as the code a client sees. */
function wireError(err: unknown, context: string): HeaplessError {
  const message = `${context}: ${err instanceof Error ? err.message : String(err)}`;
  if (isReplicaError(err, 'MESSAGE_TOO_LARGE') || isReplicaError(err, 'TOO_MANY_CHANGES'))
    return new HeaplessError('BATCH_TOO_LARGE', message, { cause: err });
  if (isReplicaError(err, 'KEY_TOO_LARGE')) return new HeaplessError('KEY_TOO_LARGE', message, { cause: err });
  if (isReplicaError(err, 'VALUE_TOO_LARGE')) return new HeaplessError('VALUE_TOO_LARGE', message, { cause: err });
  return new HeaplessError('UNAVAILABLE', message, { cause: err });
}
