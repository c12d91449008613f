/**
 * Followers (RocksDB's secondary instances): engines that read a directory another process (the writer) holds open,
 * and move to its latest state on disk when asked, by tailing its MANIFEST and WALs (live-view.ts). A follower takes
 * no lock and never writes, creates, renames or deletes a file, so any number of them may follow one writer, in any
 * processes. Tables the writer deletes (compaction inputs) stay readable to a follower while a version of it lists
 * them: it holds a descriptor of each (table-files.ts).
 */
import type { EngineOptions } from '../base/options.js';
import { Engine } from './engine.js';

/**
 * Opens a follower of the database in `dir`: an Engine that reads (`get`, `getMany`, `iterator`, `snapshot`) the
 * state on disk as of the open, and as of each `catchUp()` after; writes, `flush`, `compactRange` and `checkpoint`
 * reject with HEAPLESS_ERR_ENGINE_READ_ONLY. `options` are the engine's read options (`blockCacheSize`, `maxOpenFiles`,
 * `verifyChecksums`, `writeBufferSize` for the memtables WALs are replayed into, `numLevels` as the writer's).
 * Resolves to an engine the caller must `close()`. Rejects as `Engine.open` with `readOnly: true`: NOT_FOUND when
 * `dir` holds no database, IO, CorruptionError.
 */
export function openFollower(dir: string, options?: EngineOptions): Promise<Engine> {
  return Engine.open(dir, { ...options, follower: true });
}
