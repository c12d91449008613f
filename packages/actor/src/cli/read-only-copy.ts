/**
 * A private, writable copy of a data directory that a running server may hold open and go on writing, for
 * `heapless checkpoint publish`: the source's engine is opened read-only (engine's open/read-only.ts: no lock, no file
 * of it written, created or deleted), which shows one state the server had, made of whole write batches; every entry
 * of that state (the records, and the map's metadata with a follower's position, schema and stream, which are
 * written in the same batches as the records they describe) is written into a new engine in `target`.
 *
 * A copy rather than a checkpoint of the source: an engine checkpoint links the source's files and is written by the
 * process that holds the directory; a read-only open can only read. The copy costs writing the data once more
 * beside it, and the map opened from it loads by a scan.
 */
import { Engine } from '@heapless/engine';

/** Bytes of entries written per batch: a few memtables' worth, so that the copy never holds much in memory. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** Entries read from the source per call. */
const ENTRIES_PER_READ = 1024;

/**
 * Copies every entry of the engine in `dir` (in use by another process or not) into a new engine in `target`
 * (which must not hold a database). Throws the engine's errors: NOT_FOUND (no database in `dir`), EXISTS,
 * CorruptionError, IO. `target` is the caller's to remove, also when this throws.
 */
export async function copyEngineReadOnly(dir: string, target: string): Promise<void> {
  const source = await Engine.open(dir, { readOnly: true });
  try {
    const copy = await Engine.open(target, { errorIfExists: true });
    try {
      const entries = source.iterator({ fillCache: false });
      try {
        let batch = copy.batch();
        let bytes = 0;
        // In runs: a call per run of entries rather than a promise per entry.
        for (let run = entries.nextvSync(ENTRIES_PER_READ); run.length > 0; run = entries.nextvSync(ENTRIES_PER_READ)) {
          for (const [key, value] of run) {
            batch.put(key, value);
            bytes += key.length + value.length;
            if (bytes >= BATCH_BYTES) {
              await batch.write();
              batch = copy.batch();
              bytes = 0;
            }
          }
        }
        await batch.write();
      } finally {
        await entries.close();
      }
    } finally {
      await copy.close();
    }
  } finally {
    await source.close();
  }
}
