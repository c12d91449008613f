/**
 * The read path: point lookups (memtables newest first, then the tables of the current version, one bloom hash for
 * all) and iterators over a consistent view, which pin the version and memtables they read until closed.
 *
 * Ownership: the read path keeps the iterators it made until they close; `closeAll()` (engine close) closes those
 * left. When an iterator's close lets go of the last reference to an old version, the tables only it listed become
 * obsolete, and the read path collects them.
 */

import type { ObsoleteFiles } from '../background/obsolete-files.js';
import type { Snapshot, SnapshotList } from '../background/snapshot.js';
import { invalidArgument } from '../base/errors.js';
import type { InternalIterator } from '../base/internal-iterator.js';
import { DbIterator } from '../iterator/db-iterator.js';
import { LevelIterator } from '../iterator/level-iterator.js';
import { MergingIterator } from '../iterator/merging-iterator.js';
import { LookupResult } from '../memtable/memtable.js';
import { bloomHash } from '../table/bloom.js';
import type { TableCache } from '../table/table-cache.js';
import { DELETED, type GetResult } from '../table/table-reader.js';
import type { TableSource } from '../version/version.js';
import type { FileMetaData } from '../version/version-edit.js';
import type { VersionSet } from '../version/version-set.js';
import type { MemtableSet } from '../write/memtables.js';
import { type Bytes, checkKeyString } from '../write/write-batch.js';
import { EngineIterator, type IteratorOptions } from './engine-iterator.js';

/** Per-read options. */
export interface ReadOptions {
  /** Read as of this snapshot. */
  snapshot?: Snapshot;
}

/** Bytes of a key: strings as UTF-8 (a fresh buffer). Throws INVALID_ARGUMENT for an ill-formed string or anything else. */
export function toKey(key: Bytes): Uint8Array {
  if (typeof key === 'string') {
    checkKeyString(key, 'key');
    return Buffer.from(key, 'utf8');
  }
  if (key instanceof Uint8Array) return key;
  throw invalidArgument(`key must be a Uint8Array or a string, got ${key === null ? 'null' : typeof key}`);
}

export class ReadPath {
  private readonly versions: VersionSet;
  private readonly memtables: MemtableSet;
  private readonly snapshots: SnapshotList;
  private readonly obsolete: Pick<ObsoleteFiles, 'collect'>;
  private readonly tables: TableSource;
  /** Iterators not closed yet. */
  private readonly iterators = new Set<EngineIterator>();
  private closing = false;
  private keyScratch = Buffer.allocUnsafe(256);
  /** keyScratch[0..keyView.length), reused while string keys keep one length: no view allocated per get. */
  private keyView: Uint8Array = this.keyScratch.subarray(0, 0);

  constructor(
    versions: VersionSet,
    memtables: MemtableSet,
    tableCache: TableCache,
    snapshots: SnapshotList,
    obsolete: Pick<ObsoleteFiles, 'collect'>,
  ) {
    this.versions = versions;
    this.memtables = memtables;
    this.snapshots = snapshots;
    this.obsolete = obsolete;
    this.tables = {
      get: (f: FileMetaData, userKey: Uint8Array, seq: number, hash: number): GetResult =>
        tableCache.get(f.number, f.size).get(userKey, seq, hash, true),
      iterator: (f: FileMetaData, fillCache?: boolean): InternalIterator =>
        tableCache.get(f.number, f.size).iterator({ fillCache }),
    };
  }

  /** Iterators open now. */
  get openIterators(): number {
    return this.iterators.size;
  }

  /** The sequence reads see: the snapshot's (checked: live, of this engine), or the last one written. */
  sequenceFor(options: ReadOptions | undefined): number {
    const s = options?.snapshot;
    return s === undefined ? this.versions.lastSequence : s.check(this.snapshots);
  }

  /** The value of `key` as of `options` (a copy), or undefined. Throws INVALID_ARGUMENT or CorruptionError. */
  get(key: Bytes, options: ReadOptions | undefined): Uint8Array | undefined {
    const seq = this.sequenceFor(options);
    return this.lookup(this.keyBytes(key), seq);
  }

  /** The values of `keys` in the order asked, as of one sequence, looked up in key order (better locality). */
  getMany(keys: readonly Bytes[], options: ReadOptions | undefined): (Uint8Array | undefined)[] {
    if (!Array.isArray(keys)) throw invalidArgument('getMany takes an array of keys');
    const seq = this.sequenceFor(options);
    const bytes = keys.map(toKey);
    const order = bytes.map((_, i) => i).sort((a, b) => Buffer.compare(bytes[a]!, bytes[b]!));
    const out = new Array<Uint8Array | undefined>(keys.length);
    for (const i of order) out[i] = this.lookup(bytes[i]!, seq);
    return out;
  }

  private lookup(k: Uint8Array, seq: number): Uint8Array | undefined {
    // One hash for every memtable's and table's filter.
    const hash = bloomHash(k, 0, k.length);
    const m = this.memtables.get(k, seq, hash);
    if (m === LookupResult.Value) {
      const mem = this.memtables.found;
      return mem.bytes.slice(mem.valueOffset, mem.valueOffset + mem.valueLength);
    }
    if (m === LookupResult.Deleted) return undefined;
    // The tables' get copies the value out of its block (`tables.get` above).
    const t = this.versions.current.get(k, seq, this.tables, hash);
    return t === undefined || t === DELETED ? undefined : t;
  }

  /** The bytes of `key`, in a scratch buffer for a string key: valid until the next call (nothing may keep them). */
  private keyBytes(key: Bytes): Uint8Array {
    if (typeof key === 'string') {
      const n = key.length;
      if (this.keyScratch.length < n * 3) {
        this.keyScratch = Buffer.allocUnsafe(n * 6);
        this.keyView = this.keyScratch.subarray(0, 0);
      }
      const scratch = this.keyScratch;
      // Short ASCII keys by hand: cheaper than a call into the UTF-8 encoder.
      if (n <= 64) {
        let i = 0;
        for (; i < n; i++) {
          const c = key.charCodeAt(i);
          if (c >= 0x80) break;
          scratch[i] = c;
        }
        if (i === n) {
          if (this.keyView.length !== n) this.keyView = scratch.subarray(0, n);
          return this.keyView;
        }
      }
      checkKeyString(key, 'key');
      return scratch.subarray(0, scratch.write(key, 0, 'utf8'));
    }
    return toKey(key);
  }

  /** A new iterator over the current version and memtables (see Engine.iterator). Throws INVALID_ARGUMENT. */
  iterator(options: IteratorOptions): EngineIterator {
    const seq = this.sequenceFor(options);
    const fillCache = options.fillCache !== false;
    const version = this.versions.current;
    version.ref();
    const children: InternalIterator[] = [];
    try {
      children.push(...this.memtables.iterators());
      for (const f of version.files[0]!) children.push(this.tables.iterator(f, fillCache));
      for (let level = 1; level < version.files.length; level++) {
        const files = version.files[level]!;
        if (files.length > 0) children.push(new LevelIterator(files, this.tables, fillCache));
      }
      const db = new DbIterator(new MergingIterator(children), seq);
      const it = new EngineIterator(db, options, (closed) => {
        this.iterators.delete(closed);
        version.unref();
        // The last reader of an old version: the tables only it listed can go.
        if (!version.referenced && !this.closing) this.obsolete.collect();
      });
      this.iterators.add(it);
      return it;
    } catch (err) {
      for (const c of children) c.close();
      version.unref();
      throw err;
    }
  }

  /** Closes every iterator left open (engine close). */
  closeAll(): void {
    this.closing = true;
    for (const it of [...this.iterators]) it.closeSync();
  }
}
