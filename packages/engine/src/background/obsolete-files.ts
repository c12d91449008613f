/**
 * Deleting the files the database no longer needs (Pebble's obsolete_files.go): WALs older than the manifest's log
 * number (unless a consumer's retention pin keeps them, write/wal-retention.ts), tables no referenced version lists and no running job is writing, manifests other than the live one, and
 * temporaries. Deletion runs off the event loop; a failed unlink (the file already gone) is retried by the next pass.
 *
 * Callers run a pass whenever something may have become obsolete: after a change is installed in the manifest, when
 * the last reader of an old version lets it go, and once at open, after the new manifest is durable (never before:
 * the old manifest may still be the one CURRENT names, and it needs the WALs just replayed).
 */
import { readdirSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { FileType, type ListedFile, parseFileName, parseListing } from '../base/filenames.js';
import type { TableCache } from '../table/table-cache.js';
import type { VersionSet } from '../version/version-set.js';
import type { WalRetention } from '../write/wal-retention.js';
import type { ReaderRegistry } from './reader-pins.js';

export class ObsoleteFiles {
  private readonly dir: string;
  private readonly versions: VersionSet;
  private readonly tableCache: TableCache;
  /** Table numbers being written by a flush or compaction: not live yet, not to be deleted. */
  private readonly pendingOutputs = new Set<number>();
  /** Unlinks running, by file name. */
  private readonly deleting = new Map<string, Promise<void>>();

  /** `retention`: the consumer's pin on WALs whose data is in tables (write/wal-retention.ts). */
  constructor(
    dir: string,
    versions: VersionSet,
    tableCache: TableCache,
    private readonly retention?: WalRetention,
    /** Readers of other processes that may still read tables no version here lists (reader-pins.ts). */
    private readonly readers?: ReaderRegistry,
  ) {
    this.dir = dir;
    this.versions = versions;
    this.tableCache = tableCache;
    this.openGeneration = versions.nextFileNumber;
  }

  /**
   * The generation when the engine opened: a table unlisted then (left by an earlier run, or kept for a reader)
   * waits for the readers of views older than that.
   */
  private readonly openGeneration: number;

  /**
   * Logs below the manifest's log number that the retention pin keeps (present in the directory, not being deleted);
   * not those only the size budget keeps.
   */
  retainedLogs(): number[] {
    const logNumber = this.versions.logNumber;
    const out: number[] = [];
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return out;
    }
    const from = this.retention === undefined ? Number.POSITIVE_INFINITY : this.retention.keepFrom(logNumbers(names));
    for (const name of names) {
      const f = parseFileName(name);
      if (f?.type === FileType.Log && f.number < logNumber && f.number >= from && !this.deleting.has(name)) {
        out.push(f.number);
      }
    }
    return out.sort((a, b) => a - b);
  }

  /** Table `number` is about to be written: no pass deletes it until `release(number)`. */
  protect(number: number): void {
    this.pendingOutputs.add(number);
  }

  /** Table `number` is installed, or its job failed: it is live or obsolete like any other from now on. */
  release(number: number): void {
    this.pendingOutputs.delete(number);
  }

  /**
   * One pass: starts unlinking every obsolete file in the directory (`listing`: its engine files, when the caller
   * just read them) and evicts obsolete tables from the table cache. Never throws: a directory that cannot be read is tried again
   * at the next pass.
   */
  collect(listing?: readonly ListedFile[]): void {
    const versions = this.versions;
    const live = versions.liveTableNumbers();
    let files: readonly ListedFile[];
    try {
      files = listing ?? parseListing(readdirSync(this.dir));
    } catch {
      return;
    }
    const keepLogsFrom = this.retention === undefined ? Number.POSITIVE_INFINITY : this.keepLogsFrom(files);
    // Asked only for tables that are to go, once per generation and pass: a reader holding a view from before the
    // edit that dropped a table keeps it (a later pass deletes it).
    const allowed = new Map<number, boolean>();
    const mayDelete = (table: number) => {
      const readers = this.readers;
      if (readers === undefined) return true;
      const generation = versions.droppedAt(table) ?? this.openGeneration;
      let ok = allowed.get(generation);
      if (ok === undefined) {
        ok = readers.mayDeleteTables(generation);
        allowed.set(generation, ok);
      }
      return ok;
    };
    for (const f of files) {
      const name = f.name;
      let remove = false;
      switch (f.type) {
        case FileType.Log:
          remove = f.number < versions.logNumber && f.number < keepLogsFrom;
          if (remove) this.retention?.forget(f.number);
          break;
        case FileType.Table:
          remove = !live.has(f.number) && !this.pendingOutputs.has(f.number) && !this.deleting.has(name);
          if (remove) remove = mayDelete(f.number);
          if (remove) this.tableCache.evict(f.number);
          break;
        case FileType.Manifest:
          // Also a newer one: a crash between writing a new manifest and renaming CURRENT leaves one behind, and an
          // open that reuses the manifest CURRENT names writes none that would make it older.
          remove = f.number !== versions.manifestNumber;
          break;
        case FileType.Temp:
          remove = true;
          break;
        default:
          break;
      }
      if (remove && !this.deleting.has(name)) {
        // Off the event loop: unlinking a large table can take a while.
        const table = f.type === FileType.Table ? f.number : undefined;
        const done = unlink(join(this.dir, name))
          .then(() => {
            if (table !== undefined) versions.forgetDropped(table);
          })
          .catch(() => {})
          .finally(() => this.deleting.delete(name));
        this.deleting.set(name, done);
      }
    }
  }

  /** The lowest log number the retention pin or the size budget keeps among the logs in `names`. */
  private keepLogsFrom(files: readonly ListedFile[]): number {
    const logs: number[] = [];
    for (const f of files) if (f.type === FileType.Log) logs.push(f.number);
    const retention = this.retention!;
    return Math.min(retention.keepFrom(logs), retention.keepBySizeFrom(logs, this.versions.logNumber));
  }

  /** Resolves once the unlinks started so far are done (close waits for them). */
  async settle(): Promise<void> {
    await Promise.all([...this.deleting.values()]);
  }
}

function logNumbers(names: readonly string[]): number[] {
  const logs: number[] = [];
  for (const name of names) {
    const f = parseFileName(name);
    if (f?.type === FileType.Log) logs.push(f.number);
  }
  return logs;
}
