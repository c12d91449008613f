/**
 * The work of a flush or a compaction, as plain functions over files, so that it can run in a piscina worker
 * (compaction-worker.ts) or, at open, on the main thread. Jobs only read their inputs and write their outputs; the
 * engine installs the result in the manifest and deletes obsolete files.
 */
import { unlinkSync } from 'node:fs';
import { type ExpiryFilter, expiredEntry } from '../base/expiry-filter.js';
import { tableFileName } from '../base/filenames.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import { compareBytesAt, TRAILER_SIZE, ValueKind } from '../base/internal-key.js';
import { MergingIterator } from '../iterator/merging-iterator.js';
import { Memtable, type SharedArenas, type SharedMemtable } from '../memtable/memtable.js';
import { TableBuilder, type TableBuilderOptions } from '../table/table-builder.js';
import { TableReader } from '../table/table-reader.js';

const EMPTY = new Uint8Array(0);

/** The internal key `k` (user key `kl` bytes, then its trailer) as a tombstone of the same sequence: a copy. */
function tombstoneOf(k: Uint8Array, kl: number): Uint8Array {
  const t = k.slice(0, kl + TRAILER_SIZE);
  t[kl + TRAILER_SIZE - 1] = ValueKind.Deletion;
  return t;
}

/** A table a job wrote. */
export interface JobOutput {
  number: number;
  size: number;
  entries: number;
  smallest: Uint8Array;
  largest: Uint8Array;
}

export interface FlushTask {
  kind: 'flush';
  dir: string;
  number: number;
  memtable: SharedMemtable;
  builder: TableBuilderOptions;
}

/** User-key range of a table below the output level: tombstones inside one must be kept. */
export interface KeyRange {
  smallest: Uint8Array;
  largest: Uint8Array;
}

export interface CompactTask {
  kind: 'compact';
  dir: string;
  /** Input table numbers, newest data first (level-0 tables newest first, then the level, then the next level). */
  inputs: number[];
  /** Numbers the outputs may use, in order. */
  outputNumbers: number[];
  /** Per level below the output level, its tables' user-key ranges in order. */
  deeper: KeyRange[][];
  /** Versions hidden below this sequence by a newer version are dropped. */
  smallestSnapshot: number;
  /** Entries whose value says they expired by `now` become tombstones (expiry-filter.ts); null: none. */
  expiryFilter: ExpiryFilter | null;
  /** The time (ms since the epoch) the job was scheduled at: what the expiry filter compares with. */
  now: number;
  targetFileSize: number;
  builder: TableBuilderOptions;
}

export type JobTask = FlushTask | CompactTask;

export interface JobResult {
  outputs: JobOutput[];
  bytesRead: number;
  bytesWritten: number;
  /** Entries dropped (shadowed versions, obsolete tombstones). */
  dropped: number;
  /** Entries the expiry filter turned into tombstones. */
  expired: number;
  /** A flush run by a worker moves the memtable copy's buffers back, for the next flush's copy (`share(into)`). */
  arenas?: SharedArenas;
}

/** Writes a frozen memtable to table `number`; no output when it is empty. Throws what TableBuilder throws. */
export function flushMemtable(task: FlushTask): JobResult {
  const mem = Memtable.fromShared(task.memtable);
  const path = tableFileName(task.dir, task.number);
  const builder = new TableBuilder(path, task.builder);
  try {
    // Straight from the arena, in node order: no iterator and no views per entry.
    const bytes = mem.bytes;
    for (let n = mem.nodeAfter(0); n !== 0; n = mem.nodeAfter(n)) {
      const ko = mem.keyOffsetOf(n);
      const kl = mem.keyLengthOf(n);
      builder.addAt(bytes, ko, kl, bytes, ko + kl, mem.valueLengthOf(n));
    }
    if (builder.entries === 0) {
      builder.abandon();
      return { outputs: [], bytesRead: 0, bytesWritten: 0, dropped: 0, expired: 0 };
    }
    const meta = builder.finish();
    const out = {
      number: task.number,
      size: meta.fileSize,
      entries: meta.entries,
      smallest: meta.smallest,
      largest: meta.largest,
    };
    return { outputs: [out], bytesRead: mem.memoryUsage, bytesWritten: meta.fileSize, dropped: 0, expired: 0 };
  } catch (err) {
    builder.abandon();
    throw err;
  }
}

/** True if some range of some deeper level contains the user key `k[0, kl)`. */
function mayExistDeeper(deeper: KeyRange[][], k: Uint8Array, kl: number): boolean {
  for (const level of deeper) {
    let lo = 0;
    let hi = level.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytesAt(level[mid]!.largest, 0, level[mid]!.largest.length, k, 0, kl) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo < level.length && compareBytesAt(level[lo]!.smallest, 0, level[lo]!.smallest.length, k, 0, kl) <= 0)
      return true;
  }
  return false;
}

/**
 * Merges the input tables into new tables of about `targetFileSize` (cut only between user keys), dropping every
 * version that a newer version hides from all snapshots, and tombstones no snapshot needs when no deeper table may
 * hold the key. Throws CorruptionError from the inputs; on failure, deletes the outputs written so far.
 */
export function compactTables(task: CompactTask): JobResult {
  const readers: TableReader[] = [];
  const children: InternalIterator[] = [];
  const outputs: JobOutput[] = [];
  let builder: TableBuilder | undefined;
  let bytesRead = 0;
  let bytesWritten = 0;
  let dropped = 0;
  let expiredEntries = 0;
  let merged: InternalIterator | undefined;
  try {
    for (const n of task.inputs) {
      const r = TableReader.open(tableFileName(task.dir, n), { fileNumber: n, verifyChecksums: true });
      readers.push(r);
      children.push(r.iterator({ fillCache: false }));
    }
    merged = new MergingIterator(children);
    let current = new Uint8Array(64);
    let currentLength = -1;
    let lastSeqForKey = Number.POSITIVE_INFINITY;
    const smallestSnapshot = task.smallestSnapshot;
    const filter = task.expiryFilter;
    let nextOutput = 0;
    const finishOutput = () => {
      const b = builder!;
      builder = undefined;
      const meta = b.finish();
      const number = task.outputNumbers[nextOutput - 1]!;
      outputs.push({
        number,
        size: meta.fileSize,
        entries: meta.entries,
        smallest: meta.smallest,
        largest: meta.largest,
      });
      bytesWritten += meta.fileSize;
    };
    for (merged.seekToFirst(); merged.valid(); merged.next()) {
      const k = merged.key();
      const kl = k.length - TRAILER_SIZE;
      const at = kl;
      const trailerHi = ((k[at]! << 24) | (k[at + 1]! << 16) | (k[at + 2]! << 8) | k[at + 3]!) >>> 0;
      const seq = trailerHi * 0x100_0000 + (((k[at + 4]! << 16) | (k[at + 5]! << 8) | k[at + 6]!) >>> 0);
      const kind = k[at + 7]!;
      const newKey = currentLength < 0 || compareBytesAt(k, 0, kl, current, 0, currentLength) !== 0;
      if (newKey) {
        if (current.length < kl) current = new Uint8Array(kl * 2);
        current.set(k.subarray(0, kl), 0);
        currentLength = kl;
        lastSeqForKey = Number.POSITIVE_INFINITY;
      }
      let drop = false;
      let expired = false;
      if (lastSeqForKey <= smallestSnapshot) drop = true;
      else if (kind === ValueKind.Deletion && seq <= smallestSnapshot && !mayExistDeeper(task.deeper, k, kl))
        drop = true;
      else if (
        filter !== null &&
        kind === ValueKind.Value &&
        seq <= smallestSnapshot &&
        expiredEntry(filter, k, kl, merged.value(), task.now)
      ) {
        // The newest version no snapshot can miss, expired: a tombstone of the same sequence, or nothing when no
        // deeper table may hold an older version that it must hide.
        expired = true;
        expiredEntries++;
        drop = !mayExistDeeper(task.deeper, k, kl);
      }
      lastSeqForKey = seq;
      if (drop) {
        dropped++;
        continue;
      }
      // Past the numbers reserved, the last output grows beyond the target rather than failing.
      if (
        builder &&
        newKey &&
        builder.fileSizeEstimate >= task.targetFileSize &&
        nextOutput < task.outputNumbers.length
      ) {
        finishOutput();
      }
      if (!builder) {
        builder = new TableBuilder(tableFileName(task.dir, task.outputNumbers[nextOutput++]!), task.builder);
      }
      if (expired) builder.add(tombstoneOf(k, kl), EMPTY);
      else builder.add(k, merged.value());
    }
    if (builder) finishOutput();
    for (const r of readers) bytesRead += r.fileSize;
    return { outputs, bytesRead, bytesWritten, dropped, expired: expiredEntries };
  } catch (err) {
    builder?.abandon();
    for (const o of outputs) {
      try {
        unlinkSync(tableFileName(task.dir, o.number));
      } catch {
        // Best effort: the engine deletes unlisted tables at the next open anyway.
      }
    }
    throw err;
  } finally {
    // Without a merging iterator (an input failed to open), the cursors opened so far pin their readers: close them.
    if (merged) merged.close();
    else for (const c of children) c.close();
    for (const r of readers) r.close();
  }
}

/** Runs either kind of job. */
export function runJob(task: JobTask): JobResult {
  return task.kind === 'flush' ? flushMemtable(task) : compactTables(task);
}
