/**
 * Following one WAL file that another process (the writer) appends to, for read-only opens and followers
 * (live-view.ts): each `read()` replays the records appended since the last one into memtables of this log's own,
 * and stops at the last whole record, so that a record the writer is still writing (a torn tail) is read whole at the
 * next call. Nothing here writes, locks or keeps a file open.
 */

import { logFileName } from '../base/filenames.js';
import { ValueKind } from '../base/internal-key.js';
import { Memtable } from '../memtable/memtable.js';
import { RecordReader } from '../record/record-reader.js';
import { type BatchHandler, batchCount, batchSequence, replayBatch } from '../write/write-batch.js';

export class WalTail {
  readonly number: number;
  readonly path: string;
  /** The log's records so far, oldest first (a new one starts when the last is full). */
  readonly memtables: Memtable[] = [];
  /** The highest sequence number replayed (0 before any record). */
  maxSequence = 0;
  private readonly writeBufferSize: number;
  /** Offset just past the last whole record replayed. */
  private offset = 0;
  private readonly cursor = new Int32Array(1);
  private readonly handler: BatchHandler;

  constructor(dir: string, number: number, writeBufferSize: number) {
    this.number = number;
    this.path = logFileName(dir, number);
    this.writeBufferSize = writeBufferSize;
    this.handler = {
      put: (buf, ks, kl, vs, vl, seq) => this.last().add(seq, ValueKind.Value, buf, ks, kl, buf, vs, vl),
      del: (buf, ks, kl, seq) => this.last().add(seq, ValueKind.Deletion, buf, ks, kl, buf, 0, 0),
    };
  }

  private last(): Memtable {
    return this.memtables[this.memtables.length - 1]!;
  }

  /**
   * Replays what was appended since the last call. Returns false when the file is gone (the writer retired the log:
   * the manifest has moved on). Throws CorruptionError (damage before the last record) or EngineError IO.
   */
  read(): boolean {
    let reader: RecordReader;
    try {
      reader = new RecordReader(this.path, 'damaged', this.offset);
    } catch (err) {
      if (((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return false;
      throw err;
    }
    for (let rec = reader.readRecord(); rec; rec = reader.readRecord()) {
      const count = batchCount(rec);
      const mem = this.memtables[this.memtables.length - 1];
      if (mem === undefined || !mem.hasRoomFor(rec.length, count)) {
        this.memtables.push(new Memtable(Math.max(this.writeBufferSize, Memtable.capacityForBatch(rec.length, count))));
      }
      const seq = batchSequence(rec);
      replayBatch(rec, rec.length, seq, this.handler, this.cursor, this.path, reader.recordOffset);
      if (count > 0 && seq + count - 1 > this.maxSequence) this.maxSequence = seq + count - 1;
    }
    this.offset = reader.validLength;
    return true;
  }
}
