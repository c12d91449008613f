/**
 * The shapes of the KV actor's atomic batch and named metadata (FORMAT.md, "KV batches and metadata"), shared by the
 * server that checks them and the clients that send them.
 */
import type { WriteOp } from '../protocol/write-op.js';
import type { KvWriteOptions } from './collection.js';

/**
 * One operation of a KV `batch`: a set of `key` to `value`'s bytes (stored as they are), or a delete of `key`. The
 * protocol's one write operation ({@link WriteOp}), under the name the KV API has always given it.
 */
export type KvBatchOp = WriteOp;

/** Options of a KV `batch`: its metadata (null removes a name) and its durability. */
export interface KvBatchOptions extends KvWriteOptions {
  /**
   * Named metadata written in the same atomic batch, e.g. `{ offset: <bytes> }`: small byte values kept beside the
   * records, out of their key space (no `get`, `scan` or `size` sees them); `null` removes a name.
   */
  meta?: Record<string, Uint8Array | null>;
}

/** What a KV `batch` (and `setMany`, `setMeta`, `deleteMeta`) answers once the batch is durable. */
export interface KvBatchResult {
  /**
   * The storage engine's sequence number of the batch's last entry (later batches have greater ones); absent on a
   * memory-only server.
   */
  sequence?: number;
}
