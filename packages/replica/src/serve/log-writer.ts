/**
 * The write path of a replica: a write goes to the change stream as one message (JetStream publish with a message
 * id, so a publish retried inside the publisher is stored once), and is answered once this replica's follower has
 * applied that message's sequence, so that a writer reads its own writes on the replica it wrote to. A failure
 * keeps its code where it says what is wrong with the write itself (too large); anything else is `HEAPLESS_ERR_REPLICA_UNAVAILABLE`
 * (the log cannot be reached, or the write is not applied within the timeout).
 */

import { randomUUID } from 'node:crypto';
import type { WriteOp } from '@heapless/client/protocol';
import { DEFAULT_CHANGE_LIMITS } from '../change/change-format.js';
import type { ChangePublisher } from '../change/change-publisher.js';
import { isReplicaError, ReplicaError, type ReplicaErrorCode } from '../errors.js';
import type { Follower } from '../follow/follower.js';

/** The codes a failed write keeps: they describe the write, which no retry mends. */
const WRITE_CODES: ReadonlySet<ReplicaErrorCode> = new Set<ReplicaErrorCode>([
  'HEAPLESS_ERR_REPLICA_MESSAGE_TOO_LARGE',
  'HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES',
  'HEAPLESS_ERR_REPLICA_KEY_TOO_LARGE',
  'HEAPLESS_ERR_REPLICA_VALUE_TOO_LARGE',
]);

export class LogWriter {
  /** A change message holds at most this many changes (FORMAT.md). */
  readonly maxChanges = DEFAULT_CHANGE_LIMITS.maxChanges;
  /** This process's message ids: `<unique prefix>-<counter>`, so ids never repeat across servers or restarts. */
  readonly #idPrefix = randomUUID();
  #count = 0;

  constructor(
    private readonly publisher: ChangePublisher,
    private readonly follower: Follower,
    private readonly timeoutMs: number,
  ) {}

  async write(changes: readonly WriteOp[]): Promise<{ sequence: number }> {
    // A follower that stopped would never apply the write: do not put it in the log for the others alone.
    const failure = this.follower.failure;
    if (failure !== undefined) throw writeError(failure, 'this server stopped following its change stream');
    const started = performance.now();
    let seq: number;
    try {
      seq = (await this.publisher.publish(changes, { msgId: `${this.#idPrefix}-${++this.#count}` })).seq;
    } catch (err) {
      throw writeError(err, 'the write was not stored in the change log');
    }
    const left = Math.max(1, Math.round(this.timeoutMs - (performance.now() - started)));
    try {
      await this.follower.waitFor(seq, left);
    } catch (err) {
      throw writeError(err, `the write is message ${seq} of the change log, not applied here yet`);
    }
    return { sequence: seq };
  }
}

/** `err` as a write's failure: `context` and its message, its code if it is one of {@link WRITE_CODES}. */
function writeError(err: unknown, context: string): ReplicaError {
  const message = `${context}: ${err instanceof Error ? err.message : String(err)}`;
  const code = isReplicaError(err) && WRITE_CODES.has(err.code) ? err.code : 'HEAPLESS_ERR_REPLICA_UNAVAILABLE';
  return new ReplicaError(code, message, { cause: err });
}
