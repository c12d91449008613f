/**
 * The KV actor's checks of what one call carries against the actor's own bounds (key and value bytes, operations in
 * one batch): the shapes a remote caller may send, refused before anything is written. kv-checks.ts has the checks
 * that need no bound of the actor's.
 */
import { deleteOp, HeaplessError, type KvBatchOp, setOp, type WriteOp } from '@heapless/client/protocol';
import { illFormed } from './kv-checks.js';

/** The bounds one call is checked against. */
export interface KvBounds {
  readonly maxKeyBytes: number;
  readonly maxValueBytes: number;
  readonly maxBatchOps: number;
}

/** Checks keys, values and batches against one actor's bounds; each method throws the error a caller sees. */
export class KvLimits {
  readonly #maxKeyBytes: number;
  readonly #maxValueBytes: number;
  readonly #maxBatchOps: number;

  constructor(bounds: KvBounds) {
    this.#maxKeyBytes = bounds.maxKeyBytes;
    this.#maxValueBytes = bounds.maxValueBytes;
    this.#maxBatchOps = bounds.maxBatchOps;
  }

  /** Throws `BAD_ARGUMENTS` (not a well-formed string) or `KEY_TOO_LARGE` (over `maxKeyBytes` in UTF-8). */
  checkKey(key: unknown): asserts key is string {
    if (typeof key !== 'string') throw new HeaplessError('BAD_ARGUMENTS', `a key is a string, got ${typeof key}`);
    if (!key.isWellFormed()) throw illFormed('a key', key);
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only long keys need counting.
    if (key.length * 3 > this.#maxKeyBytes && Buffer.byteLength(key) > this.#maxKeyBytes) {
      throw new HeaplessError(
        'KEY_TOO_LARGE',
        `key of ${Buffer.byteLength(key)} bytes, the limit is ${this.#maxKeyBytes}`,
      );
    }
  }

  /** Throws `BAD_ARGUMENTS` (not bytes) or `VALUE_TOO_LARGE` (over `maxValueBytes`). */
  checkValue(value: unknown): asserts value is Uint8Array {
    if (!(value instanceof Uint8Array)) {
      throw new HeaplessError('BAD_ARGUMENTS', 'a value is bytes (msgpack bin): encode it on the client');
    }
    if (value.length > this.#maxValueBytes) {
      throw new HeaplessError('VALUE_TOO_LARGE', `value of ${value.length} bytes, the limit is ${this.#maxValueBytes}`);
    }
  }

  /** Throws `BATCH_TOO_LARGE` for more than `maxBatchOps` operations. */
  checkCount(n: number, what: string): void {
    if (n > this.#maxBatchOps) {
      throw new HeaplessError(
        'BATCH_TOO_LARGE',
        `${what} of ${n} operations, the limit is ${this.#maxBatchOps}: split it into several batches`,
      );
    }
  }

  /** `setMany`'s `[key, value]` pairs as sets, each checked; throws at the first that is not one. */
  setManyOps(entries: readonly [string, Uint8Array][]): WriteOp[] {
    const ops: WriteOp[] = [];
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (!Array.isArray(e) || e.length !== 2) {
        throw new HeaplessError('BAD_ARGUMENTS', `setMany: entries[${i}] is not [key, value]`);
      }
      this.checkKey(e[0]);
      this.checkValue(e[1]);
      ops.push(setOp(e[0], e[1]));
    }
    return ops;
  }

  /** `batch`'s operations, each checked, as plain sets and deletes; throws at the first of another shape. */
  batchOps(ops: readonly KvBatchOp[]): WriteOp[] {
    const checked: WriteOp[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as { type?: unknown; key?: unknown; value?: unknown } | null;
      if (typeof op !== 'object' || op === null)
        throw new HeaplessError('BAD_ARGUMENTS', `batch: ops[${i}] is not an object`);
      this.checkKey(op.key);
      if (op.type === 'set') {
        this.checkValue(op.value);
        checked.push(setOp(op.key, op.value));
      } else if (op.type === 'delete') checked.push(deleteOp(op.key));
      else throw new HeaplessError('BAD_ARGUMENTS', `batch: ops[${i}].type is 'set' or 'delete'`);
    }
    return checked;
  }
}
