/**
 * Where a KV actor's writes go instead of its map: on a following server (`heapless serve --follow`), the change
 * log that every replica applies, this one included. The actor checks a write as usual, hands its operations to
 * the sink in order, and replies when the sink resolves, which a log sink does once this server has applied the
 * write (so that a client reads its own writes on the server it wrote to).
 */
import type { WriteOp } from '@heapless/client/protocol';

/** A destination for a KV actor's writes. */
export interface WriteSink {
  /** Most operations in one write (a `batch` or `setMany` of more is `BATCH_TOO_LARGE`). */
  readonly maxOps: number;
  /**
   * Writes `ops` as one atomic unit and resolves, with the unit's position in the log, once they are applied to the
   * map this actor reads. Rejects with a `HeaplessError` (`UNAVAILABLE`: not written or not applied in time;
   * `BATCH_TOO_LARGE`: more than one unit holds).
   */
  write(ops: readonly WriteOp[]): Promise<{ sequence: number }>;
}
