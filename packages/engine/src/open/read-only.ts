/**
 * Opening a directory read-only (`readOnly: true`) or as a follower (`follower: true`, `openFollower`): no lock, no
 * file written, created, renamed or deleted, ever. What comes out is a live view (live-view.ts) of the state on disk
 * as of the open, the WALs replayed into memory only, from which the engine is assembled as from `openDatabase`.
 */
import { EngineError, ErrorCodes } from '../base/errors.js';
import type { ResolvedOptions } from '../base/options.js';
import { LiveView } from '../follower/live-view.js';
import { VersionSet } from '../version/version-set.js';
import type { OpenedDatabase } from './opened-database.js';

/**
 * Opens `dir` without changing it (see the top of the file). Throws EngineError NOT_FOUND when it holds no database,
 * IO, or CorruptionError; a failed open holds nothing.
 */
export function openReadOnly(dir: string, options: ResolvedOptions): OpenedDatabase {
  if (!VersionSet.exists(dir)) {
    throw new EngineError(ErrorCodes.NOT_FOUND, `${dir} holds no database to open read-only`);
  }
  const view = new LiveView(dir, options);
  try {
    view.refresh();
  } catch (err) {
    view.close();
    throw err;
  }
  return {
    dir,
    options,
    lock: undefined,
    readers: undefined,
    versions: view.versions,
    mem: view.memtables.live,
    pending: [],
    log: undefined,
    logNumber: 0,
    listing: [],
    recovered: [],
    view,
  };
}

/** HEAPLESS_ERR_ENGINE_READ_ONLY for `what` (a write, flush...) asked of the read-only engine of `dir`. */
export function readOnlyError(dir: string, what: string): EngineError {
  return new EngineError(ErrorCodes.READ_ONLY, `${what} refused: engine ${dir} is open read-only`);
}
