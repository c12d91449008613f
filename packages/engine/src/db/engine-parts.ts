/**
 * The parts an Engine is made of, assembled from what an open recovered (open.ts, read-only.ts), each handed what it
 * needs whole when it is made (Pebble's Open does the same): the caches, the memtables, the write gate, the WALs kept
 * for `updatesSince`, obsolete files, background work, the write and read paths, the periodic compaction schedule.
 * engine.ts holds them behind the public API and drives their close.
 */
import { BackgroundWork } from '../background/background.js';
import { ObsoleteFiles } from '../background/obsolete-files.js';
import { PeriodicCompaction } from '../background/periodic-compaction.js';
import { SnapshotList } from '../background/snapshot.js';
import { JobPool } from '../compaction/job-pool.js';
import type { LiveView } from '../follower/live-view.js';
import type { OpenedDatabase } from '../open/opened-database.js';
import { ReadPath } from '../read/read-path.js';
import { BlockCache } from '../table/block-cache.js';
import { TableCache } from '../table/table-cache.js';
import { MemtableSet } from '../write/memtables.js';
import { WalRetention } from '../write/wal-retention.js';
import { WriteGate } from '../write/write-gate.js';
import { WritePath } from '../write/write-path.js';
import type { FigureSources } from './properties.js';

/** Every part of an engine (its stats read most of them). */
export interface EngineParts extends FigureSources {
  retention: WalRetention;
  obsolete: ObsoleteFiles;
}

/**
 * Makes the parts of the engine of `db`; `compactRange` is the engine's, which the periodic schedule runs. Starts
 * nothing: no timer, no worker, no file deleted.
 */
export function assembleParts(db: OpenedDatabase, compactRange: () => Promise<void>): EngineParts {
  const { dir, options, versions, view } = db;
  const jobs = new JobPool();
  const snapshots = new SnapshotList();
  const blockCache = new BlockCache({ capacity: options.blockCacheSize });
  const tableCache = new TableCache(dir, {
    maxOpenFiles: options.maxOpenFiles,
    blockCache,
    verifyChecksums: options.verifyChecksums,
    pathOf: view && ((n) => view.tables.pathOf(n)),
  });
  const memtables = view?.memtables ?? new MemtableSet(db.mem, db.logNumber, db.pending);
  const gate = new WriteGate(memtables, versions, options);
  const pin = options.retainWalAfter >= 0 ? options.retainWalAfter : undefined;
  const retention = new WalRetention(dir, pin, options.walRetentionBytes);
  const obsolete = new ObsoleteFiles(dir, versions, tableCache, retention, db.readers);
  const background = new BackgroundWork({ dir, options, versions, memtables, jobs, snapshots, obsolete, gate });
  const writes = new WritePath({ dir, options, versions, memtables, gate, background, jobs, log: db.log });
  // A view's tables are the writer's to delete: once no version lists one, the view only lets go of it.
  const collector = view ? { collect: () => releaseTables(view, tableCache) } : obsolete;
  const reads = new ReadPath(versions, memtables, tableCache, snapshots, collector);
  // A read-only view never compacts: its schedule is off whatever the options say.
  const periodic = new PeriodicCompaction(view ? false : options.periodicCompaction, compactRange);
  return {
    versions,
    memtables,
    background,
    gate,
    snapshots,
    reads,
    writes,
    tableCache,
    blockCache,
    jobs,
    periodic,
    retention,
    obsolete,
  };
}

/** A view's tables that no version lists any more: their descriptors closed, their readers and blocks dropped. */
export function releaseTables(view: LiveView, tables: TableCache): void {
  for (const n of view.collect()) tables.evict(n);
}
