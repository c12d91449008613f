/**
 * What an open hands the engine (engine.ts) to be assembled from, whether it opened the directory as the writer
 * (open.ts) or read-only (read-only.ts): the one type both kinds of open return.
 */

import type { ReaderRegistry } from '../background/reader-pins.js';
import type { ListedFile } from '../base/filenames.js';
import type { ResolvedOptions } from '../base/options.js';
import type { LiveView } from '../follower/live-view.js';
import type { Memtable } from '../memtable/memtable.js';
import type { RecordWriter } from '../record/record-writer.js';
import type { VersionSet } from '../version/version-set.js';
import type { PendingRecord } from '../write/memtables.js';
import type { UpdateBatch } from '../write/updates-since.js';
import type { LockFile } from './lock-file.js';

/** An opened, recovered database: what the engine is assembled from. The engine takes ownership of all of it. */
export interface OpenedDatabase {
  dir: string;
  options: ResolvedOptions;
  /** The directory's lock; undefined for a read-only open, which takes none. */
  lock: LockFile | undefined;
  /** The writer's side of the readers' pins on tables (reader-pins.ts); undefined for a read-only open. */
  readers: ReaderRegistry | undefined;
  versions: VersionSet;
  /** The live memtable: the replayed one after a clean close, else empty. */
  mem: Memtable;
  /** Records of the live WAL still to insert into `mem` (a clean close's, see the top); empty when none. */
  pending: PendingRecord[];
  /** The live WAL's file and number (without a WAL: undefined and 0). */
  log: RecordWriter | undefined;
  logNumber: number;
  /** The engine's files in the directory as open found them, for the first pass over obsolete files. */
  listing: ListedFile[];
  /**
   * With a `retainWalAfter` pin: the batches the replay read that hold writes after the pin, in order (views of the
   * logs' bytes, read once), for the first `updatesSince` to answer from instead of reading the logs again. Empty
   * without a pin.
   */
  recovered: UpdateBatch[];
  /** For a read-only or follower open: the view of the directory, which also holds `versions` and the memtables. */
  view?: LiveView;
}
