/**
 * Iterators: abstract-level's entry, key and value iterators over one `EngineIterator` each. The engine iterator
 * reads a consistent version as of its creation (abstract-level's implicit snapshot), or as of an explicit
 * snapshot, and does the range, direction and limit itself; these classes only turn its bytes into the private
 * API's formats. `nextv(n)` is one engine `nextvSync(n)`, and `all()` one `nextvSync` of everything left, so a
 * scan pays one promise per batch, not per entry. The engine's reads are synchronous, so a call is over before an
 * abort signal could fire: abstract-level's own checks of the signal (before each call) are all there is.
 */
import type { Engine, EngineIterator, Entry, IteratorOptions } from '@heapless/engine';
import { AbstractIterator, AbstractKeyIterator, AbstractValueIterator } from 'abstract-level';
import { HeaplessLevelError, LevelErrorCodes, toLevelError } from './errors.js';
import { type Format, type FormatData, fromEngine } from './formats.js';
import type { HeaplessSnapshot } from './snapshot.js';

/** The range options abstract-level passes to `_iterator`, `_keys`, `_values` and `_clear`, encoded already. */
export interface PrivateRangeOptions {
  gt?: FormatData;
  gte?: FormatData;
  lt?: FormatData;
  lte?: FormatData;
  reverse: boolean;
  /** -1 for no limit. */
  limit: number;
  keyEncoding: Format;
  snapshot?: HeaplessSnapshot;
  /** Passed on to the engine: whether blocks read from disk enter the block cache (default true). */
  fillCache?: boolean;
}

/** What `_iterator`, `_keys` and `_values` get. */
export interface PrivateIteratorOptions extends PrivateRangeOptions {
  valueEncoding: Format;
  keys?: boolean;
  values?: boolean;
}

/** An engine iterator over the range of `options`, carrying keys and/or values. Throws as the engine does, mapped. */
export function openEngineIterator(
  engine: Engine,
  options: PrivateRangeOptions,
  keys: boolean,
  values: boolean,
): EngineIterator {
  const snapshot = options.snapshot?.engineSnapshot;
  // abstract-level checks the snapshot at each read, but the engine iterator is made before the first.
  if (snapshot?.released) {
    throw new HeaplessLevelError(LevelErrorCodes.SNAPSHOT_NOT_OPEN, 'Snapshot is not open: cannot read after close()');
  }
  const engineOptions: IteratorOptions = {
    gt: options.gt,
    gte: options.gte,
    lt: options.lt,
    lte: options.lte,
    reverse: options.reverse,
    limit: options.limit,
    snapshot,
    keys,
    values,
    fillCache: options.fillCache,
  };
  try {
    return engine.iterator(engineOptions);
  } catch (err) {
    throw toLevelError(err);
  }
}

type Slot = FormatData | undefined;

/**
 * One engine iterator and what an abstract-level iterator makes of each of its entries (`pick`: the entry, its key
 * or its value, in the private API's formats). Engine errors come out mapped to Level's codes.
 */
class EngineReader<T> {
  private readonly it: EngineIterator;
  private readonly pick: (entry: Entry) => T;

  constructor(it: EngineIterator, pick: (entry: Entry) => T) {
    this.it = it;
    this.pick = pick;
  }

  next(): T | undefined {
    let entry: Entry | undefined;
    try {
      entry = this.it.nextSync();
    } catch (err) {
      throw toLevelError(err);
    }
    return entry === undefined ? undefined : this.pick(entry);
  }

  /** Up to `n` next items (all that are left for `Infinity`), in one engine call. */
  nextv(n: number): T[] {
    let entries: Entry[];
    try {
      entries = this.it.nextvSync(n);
    } catch (err) {
      throw toLevelError(err);
    }
    const out = entries as unknown as T[];
    for (let i = 0; i < entries.length; i++) out[i] = this.pick(entries[i]!);
    return out;
  }

  seek(target: FormatData): void {
    try {
      this.it.seek(target);
    } catch (err) {
      throw toLevelError(err);
    }
  }

  close(): Promise<void> {
    return this.it.close();
  }
}

/** The entry itself, converted in place (the engine hands out fresh arrays and copies, owned by the caller). */
function entryPicker(options: PrivateIteratorOptions): (entry: Entry) => [FormatData, FormatData] {
  const kf = options.keys === false ? undefined : options.keyEncoding;
  const vf = options.values === false ? undefined : options.valueEncoding;
  return (entry) => {
    const slots = entry as unknown as [Slot, Slot];
    slots[0] = kf === undefined ? undefined : fromEngine(entry[0], kf);
    slots[1] = vf === undefined ? undefined : fromEngine(entry[1], vf);
    return slots as [FormatData, FormatData];
  };
}

/** `db.iterator()`: entries `[key, value]`, either side `undefined` when `keys: false` / `values: false`. */
export class HeaplessIterator<TDatabase> extends AbstractIterator<TDatabase, FormatData, FormatData> {
  private readonly reader: EngineReader<[FormatData, FormatData]>;

  /** @internal Made by `db._iterator()` with an engine iterator carrying what `options` asks for. */
  constructor(db: TDatabase, options: PrivateIteratorOptions, it: EngineIterator) {
    super(db, options);
    this.reader = new EngineReader(it, entryPicker(options));
  }

  /** @internal */
  async _next(): Promise<[FormatData, FormatData] | undefined> {
    return this.reader.next();
  }

  /** @internal */
  async _nextv(size: number): Promise<[FormatData, FormatData][]> {
    return this.reader.nextv(size);
  }

  /** @internal */
  async _all(): Promise<[FormatData, FormatData][]> {
    return this.reader.nextv(Number.POSITIVE_INFINITY);
  }

  /** @internal */
  _seek(target: FormatData): void {
    this.reader.seek(target);
  }

  /** @internal */
  _close(): Promise<void> {
    return this.reader.close();
  }
}

/** `db.keys()`, over an engine iterator that copies no values. */
export class HeaplessKeyIterator<TDatabase> extends AbstractKeyIterator<TDatabase, FormatData> {
  private readonly reader: EngineReader<FormatData>;

  /** @internal Made by `db._keys()`. */
  constructor(db: TDatabase, options: PrivateRangeOptions, it: EngineIterator) {
    super(db, options);
    const format = options.keyEncoding;
    this.reader = new EngineReader(it, (entry) => fromEngine(entry[0], format));
  }

  /** @internal */
  async _next(): Promise<FormatData | undefined> {
    return this.reader.next();
  }

  /** @internal */
  async _nextv(size: number): Promise<FormatData[]> {
    return this.reader.nextv(size);
  }

  /** @internal */
  async _all(): Promise<FormatData[]> {
    return this.reader.nextv(Number.POSITIVE_INFINITY);
  }

  /** @internal */
  _seek(target: FormatData): void {
    this.reader.seek(target);
  }

  /** @internal */
  _close(): Promise<void> {
    return this.reader.close();
  }
}

/** `db.values()`, over an engine iterator that hands out no keys. */
export class HeaplessValueIterator<TDatabase> extends AbstractValueIterator<TDatabase, FormatData, FormatData> {
  private readonly reader: EngineReader<FormatData>;

  /** @internal Made by `db._values()`. */
  constructor(db: TDatabase, options: PrivateIteratorOptions, it: EngineIterator) {
    super(db, options);
    const format = options.valueEncoding;
    this.reader = new EngineReader(it, (entry) => fromEngine(entry[1], format));
  }

  /** @internal */
  async _next(): Promise<FormatData | undefined> {
    return this.reader.next();
  }

  /** @internal */
  async _nextv(size: number): Promise<FormatData[]> {
    return this.reader.nextv(size);
  }

  /** @internal */
  async _all(): Promise<FormatData[]> {
    return this.reader.nextv(Number.POSITIVE_INFINITY);
  }

  /** @internal */
  _seek(target: FormatData): void {
    this.reader.seek(target);
  }

  /** @internal */
  _close(): Promise<void> {
    return this.reader.close();
  }
}
