/**
 * A write batch: puts and deletes applied atomically, under consecutive sequence numbers, as one WAL record.
 * Its encoding is what the WAL stores (FORMAT.md "Write batch"):
 *
 *   batch  = sequence u32le-lo u32le-hi (8) | count u32le | entry*
 *   entry  = kind u8 (1 = put, 0 = delete) | varint32 keyLength | key | [ varint32 valueLength | value ]   (put only)
 *
 * The engine reuses one batch for every single put/delete, so encoding allocates nothing per call.
 */
export { BATCH_HEADER_SIZE, batchCount, batchSequence } from '../base/batch-header.js';

import { BATCH_HEADER_SIZE, batchCount } from '../base/batch-header.js';
import { getVarint32, putVarint32, varint32Length } from '../base/coding.js';
import { CorruptionError, invalidArgument } from '../base/errors.js';
import { ValueKind } from '../base/internal-key.js';

/** Keys and values: bytes, or strings taken as UTF-8. */
export type Bytes = Uint8Array | string;

/** Largest key accepted. Keys live in memtable arenas and table blocks; 1 MiB keeps blocks sane. */
export const MAX_KEY_SIZE = 1024 * 1024;
/** Largest value accepted: it must fit one memtable arena and one table block. */
export const MAX_VALUE_SIZE = 256 * 1024 * 1024;

/**
 * Throws EngineError INVALID_ARGUMENT when the string `key` holds a lone surrogate: UTF-8 cannot encode it (Buffer
 * writes U+FFFD instead), so `'\ud800'` and `'\ufffd'` would be one key. Called only on the non-ASCII path.
 */
export function checkKeyString(key: string, what: string): void {
  if (!key.isWellFormed()) {
    throw invalidArgument(`${what} is not well-formed UTF-16 (it holds a lone surrogate, which UTF-8 cannot encode)`);
  }
}

/** What receives a batch's entries when it is replayed (memtable insert, WAL recovery). */
export interface BatchHandler {
  put(buf: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number, seq: number): void;
  del(buf: Uint8Array, keyStart: number, keyLength: number, seq: number): void;
}

export class WriteBatch {
  /** The encoded batch: `rep[0, length)`. */
  rep: Buffer;
  length = BATCH_HEADER_SIZE;
  count = 0;
  private readonly commit: ((batch: WriteBatch, sync: boolean | undefined) => Promise<void>) | undefined;

  /**
   * A batch bound to an engine is written with `write()`; an unbound one is passed to `engine.write(batch)`.
   * Applications get batches from `engine.batch()`.
   */
  constructor(commit?: (batch: WriteBatch, sync: boolean | undefined) => Promise<void>, initialSize = 256) {
    this.rep = Buffer.alloc(Math.max(initialSize, BATCH_HEADER_SIZE));
    this.commit = commit;
  }

  /** Queues a put. Throws HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT for a key or value of the wrong type or size. Returns this. */
  put(key: Bytes, value: Bytes): this {
    const at = this.length;
    this.reserve(1);
    this.rep[at] = ValueKind.Value;
    try {
      this.length = this.putField(this.putField(at + 1, key, 'key', MAX_KEY_SIZE), value, 'value', MAX_VALUE_SIZE);
    } catch (err) {
      this.length = at;
      throw err;
    }
    this.count++;
    return this;
  }

  /** Queues a delete. Throws HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT for a bad key. Returns this. */
  del(key: Bytes): this {
    const at = this.length;
    this.reserve(1);
    this.rep[at] = ValueKind.Deletion;
    try {
      this.length = this.putField(at + 1, key, 'key', MAX_KEY_SIZE);
    } catch (err) {
      this.length = at;
      throw err;
    }
    this.count++;
    return this;
  }

  /** Empties the batch. Returns this. */
  clear(): this {
    this.length = BATCH_HEADER_SIZE;
    this.count = 0;
    return this;
  }

  /**
   * Writes the batch atomically through the engine that made it (see `Engine.write`), then leaves it empty for
   * reuse. Throws HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT for a batch made without an engine.
   */
  write(options?: { sync?: boolean }): Promise<void> {
    if (!this.commit)
      return Promise.reject(invalidArgument('this batch was not made by engine.batch(); pass it to engine.write()'));
    const p = this.commit(this, options?.sync);
    this.clear();
    return p;
  }

  /** Bytes of the encoded batch (header included). */
  get byteLength(): number {
    return this.length;
  }

  /** Stamps the sequence number of the first entry and the count into the header. */
  seal(firstSeq: number): void {
    const rep = this.rep;
    rep.writeUInt32LE(firstSeq >>> 0, 0);
    rep.writeUInt32LE(Math.floor(firstSeq / 0x1_0000_0000), 4);
    rep.writeUInt32LE(this.count, 8);
  }

  /**
   * Writes `varint32 length | bytes` of `b` at `at`; returns the offset after it. Short ASCII strings are encoded by
   * hand (cheaper than a call into the UTF-8 encoder); others are written after a worst-case varint gap that is then
   * closed. Throws INVALID_ARGUMENT for a wrong type or a size above `max`.
   */
  private putField(at: number, b: Bytes, what: string, max: number): number {
    if (typeof b === 'string') {
      const n = b.length;
      this.reserve(at - this.length + 5 + 3 * n + 1);
      const rep = this.rep;
      if (n < 128) {
        // One varint byte covers any length below 128; try pure ASCII first.
        let i = 0;
        for (; i < n; i++) {
          const c = b.charCodeAt(i);
          if (c >= 0x80) break;
          rep[at + 1 + i] = c;
        }
        if (i === n) {
          rep[at] = n;
          return at + 1 + n;
        }
      }
      if (what === 'key') checkKeyString(b, what);
      const gap = varint32Length(3 * n);
      const len = rep.write(b, at + gap, 'utf8');
      if (len > max) throw invalidArgument(`${what} of ${len} bytes exceeds the maximum of ${max}`);
      const vl = varint32Length(len);
      if (vl !== gap) rep.copyWithin(at + vl, at + gap, at + gap + len);
      putVarint32(rep, at, len);
      return at + vl + len;
    }
    if (!(b instanceof Uint8Array)) {
      throw invalidArgument(`${what} must be a Uint8Array or a string, got ${b === null ? 'null' : typeof b}`);
    }
    const len = b.length;
    if (len > max) throw invalidArgument(`${what} of ${len} bytes exceeds the maximum of ${max}`);
    this.reserve(at - this.length + 5 + len);
    at = putVarint32(this.rep, at, len);
    if (len <= 32) {
      const rep = this.rep;
      for (let i = 0; i < len; i++) rep[at + i] = b[i]!;
    } else {
      this.rep.set(b, at);
    }
    return at + len;
  }

  private reserve(n: number): void {
    if (this.length + n <= this.rep.length) return;
    let size = this.rep.length * 2;
    while (size < this.length + n) size *= 2;
    const grown = Buffer.alloc(size);
    // The whole buffer: a put in progress has written past `length`.
    this.rep.copy(grown, 0, 0, this.rep.length);
    this.rep = grown;
  }
}

function corrupt(file: string, fileOffset: number, what: string): never {
  throw new CorruptionError(file, fileOffset, `write batch: ${what}`);
}

/**
 * Replays the entries of an encoded batch `rep[0, end)` into `handler`, giving them consecutive sequence numbers from
 * `firstSeq`. `cursor` is caller-owned scratch (one cell) so that replay allocates nothing. Throws CorruptionError
 * naming `file` and the batch's `fileOffset` when the encoding does not hold (count, lengths, kinds).
 */
export function replayBatch(
  rep: Uint8Array,
  end: number,
  firstSeq: number,
  handler: BatchHandler,
  cursor: Int32Array,
  file: string,
  fileOffset: number,
): void {
  if (end < BATCH_HEADER_SIZE) corrupt(file, fileOffset, `too short (${end} bytes)`);
  const count = batchCount(rep);
  cursor[0] = BATCH_HEADER_SIZE;
  let seq = firstSeq;
  for (let i = 0; i < count; i++, seq++) {
    if (cursor[0]! >= end) corrupt(file, fileOffset, `holds ${i} entries, header says ${count}`);
    const kind = rep[cursor[0]!++];
    const kl = getVarint32(rep, cursor, end);
    if (kl < 0 || cursor[0]! + kl > end) corrupt(file, fileOffset, 'key runs past the end');
    const ks = cursor[0]!;
    cursor[0] = ks + kl;
    if (kind === ValueKind.Value) {
      const vl = getVarint32(rep, cursor, end);
      if (vl < 0 || cursor[0]! + vl > end) corrupt(file, fileOffset, 'value runs past the end');
      const vs = cursor[0]!;
      cursor[0] = vs + vl;
      handler.put(rep, ks, kl, vs, vl, seq);
    } else if (kind === ValueKind.Deletion) {
      handler.del(rep, ks, kl, seq);
    } else {
      corrupt(file, fileOffset, `unknown entry kind ${kind}`);
    }
  }
  if (cursor[0] !== end) corrupt(file, fileOffset, 'trailing bytes after the last entry');
}
