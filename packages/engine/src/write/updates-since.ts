/**
 * The writes after a sequence number, read back from the WALs (RocksDB's `GetUpdatesSince`): what a consumer that
 * holds the state as of sequence S (a map image) replays to catch up, instead of reading everything. The logs are
 * those in the directory — the live one, the frozen memtables', and the older ones a retention pin kept
 * (wal-retention.ts) — read in number order; their batches must continue S without a gap, or the answer says the
 * engine no longer has them (the consumer then rebuilds from the tables).
 */
import { readdirSync } from 'node:fs';
import { CorruptionError, EngineError } from '../base/errors.js';
import { FileType, logFileName, parseFileName } from '../base/filenames.js';
import { firstFragment, RecordReader } from '../record/record-reader.js';
import { type BatchHandler, batchCount, batchSequence, replayBatch } from './write-batch.js';

/** One WAL record: a batch of `count` writes numbered from `sequence`. */
export interface UpdateBatch {
  readonly sequence: number;
  readonly count: number;
  /** The encoded batch (FORMAT.md "Write batch"), a view into the log's bytes. */
  readonly rep: Uint8Array;
}

/** Receives each write of a batch: `value` undefined for a delete; both views are valid during the call only. */
export type UpdateVisitor = (sequence: number, key: Uint8Array, value: Uint8Array | undefined) => void;

/** What `Engine.updatesSince` answers: the batches after the sequence asked, or why they cannot be had. */
export type UpdatesSince =
  | { readonly ok: true; readonly batches: readonly UpdateBatch[]; readonly updates: number }
  | { readonly ok: false; readonly reason: string };

/**
 * The batches of `dir`'s WALs holding writes after `after`, through `last` (the engine's last sequence, every write
 * of which is in its logs' files). A batch that straddles `after` is included whole: `forEachUpdate` skips its
 * writes at or below `after`. Never throws: an unreadable or damaged log is a reason.
 */
export function readUpdatesSince(dir: string, after: number, last: number): UpdatesSince {
  if (after >= last) return { ok: true, batches: [], updates: 0 };
  let logs: number[];
  try {
    logs = readdirSync(dir)
      .map(parseFileName)
      .filter((f) => f?.type === FileType.Log)
      .map((f) => f!.number)
      .sort((a, b) => a - b);
  } catch (err) {
    return { ok: false, reason: `cannot list ${dir}: ${String(err)}` };
  }
  let first: number;
  try {
    first = firstLogToRead(dir, logs, after);
  } catch (err) {
    if (err instanceof EngineError) return { ok: false, reason: err.message };
    throw err;
  }
  const batches: UpdateBatch[] = [];
  /** The sequence the next batch must start at; before the first batch found, any start up to after + 1 will do. */
  let next = -1;
  try {
    read: for (const n of logs.slice(first)) {
      const reader = new RecordReader(logFileName(dir, n));
      for (let rep = reader.readRecord(); rep !== undefined; rep = reader.readRecord()) {
        const seq = batchSequence(rep);
        const count = batchCount(rep);
        if (seq > last) break read; // written after the question was asked
        if (seq + count - 1 <= after) continue;
        if (next === -1) {
          if (seq > after + 1) return { ok: false, reason: gap(after, seq, n) };
        } else if (seq !== next) {
          return { ok: false, reason: `log ${n} continues at sequence ${seq}, not ${next}` };
        }
        batches.push({ sequence: seq, count, rep });
        next = seq + count;
      }
    }
  } catch (err) {
    if (err instanceof CorruptionError || err instanceof EngineError) return { ok: false, reason: err.message };
    throw err;
  }
  if (next === -1) return { ok: false, reason: `no log holds the writes after sequence ${after}` };
  // The logs may end before `last` in a checkpoint's copy made by an earlier version of the engine, which recorded
  // the source's last sequence while its WALs held only the writes that had reached them (a copy now records the
  // last write it holds). Nothing the engine holds lies beyond them: logs are deleted oldest first, never one newer
  // than a log kept, and every table came from a log at least as old.
  return { ok: true, batches, updates: next - 1 - after };
}

/**
 * The index in `logs` (ascending numbers) of the log to start reading at: the newest whose first batch starts at or
 * before `after + 1`, so that the older ones, whose writes all precede it, are not read (with a size retention they
 * are tens of MiB a watcher's resume would read and checksum for nothing). Reads one block of each log from the
 * newest back; 0 when none qualifies (reading from the oldest then tells the gap, or the damage, as before).
 */
function firstLogToRead(dir: string, logs: readonly number[], after: number): number {
  for (let i = logs.length - 1; i > 0; i--) {
    const head = firstFragment(logFileName(dir, logs[i]!));
    // A log with no whole first batch header in its first fragment (empty, or damaged) says nothing: look further back.
    if (head === undefined || head.length < 12) continue;
    if (batchSequence(head) <= after + 1) return i;
  }
  return 0;
}

/**
 * The answer to `updatesSince(after)` from `batches` (consecutive batches read from the logs, none after `last`), or
 * undefined when they do not reach back to the write after `after`. As with `readUpdatesSince`, the logs may end
 * before `last` (a checkpoint's copy made by an earlier version).
 */
export function recoveredUpdatesSince(
  batches: readonly UpdateBatch[],
  after: number,
  last: number,
): UpdatesSince | undefined {
  if (after >= last) return { ok: true, batches: [], updates: 0 };
  let first = 0;
  while (first < batches.length && batches[first]!.sequence + batches[first]!.count - 1 <= after) first++;
  if (first === batches.length || batches[first]!.sequence > after + 1) return undefined;
  const end = batches[batches.length - 1]!;
  return { ok: true, batches: batches.slice(first), updates: end.sequence + end.count - 1 - after };
}

function gap(after: number, seq: number, log: number): string {
  return `the writes after sequence ${after} are no longer in the WAL (the oldest log kept, ${log}, starts at ${seq})`;
}

/**
 * Calls `visit` with each write of `batches` after sequence `after`, in commit order. Throws CorruptionError for a
 * batch whose encoding does not hold.
 */
export function forEachUpdate(batches: readonly UpdateBatch[], after: number, visit: UpdateVisitor): void {
  const cursor = new Int32Array(1);
  const handler: BatchHandler = {
    put(buf, ks, kl, vs, vl, seq) {
      if (seq > after) visit(seq, buf.subarray(ks, ks + kl), buf.subarray(vs, vs + vl));
    },
    del(buf, ks, kl, seq) {
      if (seq > after) visit(seq, buf.subarray(ks, ks + kl), undefined);
    },
  };
  for (const b of batches) replayBatch(b.rep, b.rep.length, b.sequence, handler, cursor, 'WAL batch', 0);
}
