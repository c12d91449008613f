/**
 * `db.batch()` with no arguments: abstract-level's chained batch over the engine's own `WriteBatch`, so that each
 * `put`/`del` is encoded straight into the batch the WAL stores and `write()` applies it atomically (one WAL
 * record, consecutive sequence numbers).
 */
import type { WriteBatch } from '@heapless/engine';
import { AbstractChainedBatch } from 'abstract-level';
import { toLevelError, toLevelWriteError } from './errors.js';
import type { FormatData } from './formats.js';

/** What abstract-level passes to `_write()`: the caller's options; `sync` is the one the engine reads. */
interface PrivateWriteOptions {
  sync?: boolean;
}

export class HeaplessChainedBatch<TDatabase> extends AbstractChainedBatch<TDatabase, FormatData, FormatData> {
  private readonly batch: WriteBatch;

  /** @internal Made by `db._chainedBatch()` with a batch of the database's engine. */
  constructor(db: TDatabase, batch: WriteBatch) {
    super(db);
    this.batch = batch;
  }

  /** @internal Throws LEVEL_INVALID_KEY / LEVEL_INVALID_VALUE for a key or value above the engine's limits. */
  _put(key: FormatData, value: FormatData): void {
    try {
      this.batch.put(key, value);
    } catch (err) {
      throw toLevelWriteError(err, [key]);
    }
  }

  /** @internal Throws LEVEL_INVALID_KEY for a key above the engine's limit. */
  _del(key: FormatData): void {
    try {
      this.batch.del(key);
    } catch (err) {
      throw toLevelWriteError(err, [key]);
    }
  }

  /** @internal */
  _clear(): void {
    this.batch.clear();
  }

  /** @internal Atomic; resolves when durable to the level asked (`sync`), as the engine's `write`. */
  async _write(options: PrivateWriteOptions): Promise<void> {
    try {
      await this.batch.write(options);
    } catch (err) {
      throw toLevelError(err);
    }
  }
}
