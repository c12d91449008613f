/**
 * Each system of `seed-open-read` as two calls: `load` (write every document in batches of {@link BATCH}, then
 * close) and `open` (open the directory again and return a reader of one key). Every system uses binary keys and
 * values and its default options except where its name says otherwise, as the seed does.
 */
import { createRequire } from 'node:module';
import { Engine, type EngineOptions, openFollower } from '@heapless/engine';
import { ClassicLevel } from 'classic-level';
import { open as openLmdb } from 'lmdb';
import { SystemUnavailableError } from '../harness/benchmark.js';
import type { OpenReadSystemName } from './system-names.js';

/** Documents per write batch while loading (one transaction for lmdb). */
const BATCH = 1000;

/** An open store that reads one key. */
export interface OpenReader {
  get(key: Uint8Array): Promise<Uint8Array | undefined> | Uint8Array | undefined;
  close(): Promise<void> | void;
}

/** How one system loads documents and opens the result. */
export interface OpenReadSystem {
  /** Writes every document of `docs` (calling `progress` with the count written so far), then closes. */
  load(dir: string, docs: Iterable<[Uint8Array, Uint8Array]>, progress: (n: number) => void): Promise<void>;
  /** Opens the loaded directory `dir` again. */
  open(dir: string): Promise<OpenReader> | OpenReader;
  /**
   * For readers that open beside a writer: opens `dir` as that writer, held for the whole of the attempts (close it
   * after them).
   */
  holdWriter?(dir: string): Promise<{ close(): Promise<void> }>;
}

/** Calls `write(batch)` for every {@link BATCH} documents and the rest. */
async function inBatches(
  docs: Iterable<[Uint8Array, Uint8Array]>,
  progress: (n: number) => void,
  write: (batch: [Uint8Array, Uint8Array][]) => Promise<unknown> | unknown,
): Promise<void> {
  let batch: [Uint8Array, Uint8Array][] = [];
  let written = 0;
  for (const doc of docs) {
    batch.push(doc);
    if (batch.length === BATCH) {
      await write(batch);
      written += batch.length;
      progress(written);
      batch = [];
    }
  }
  if (batch.length > 0) await write(batch);
}

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** lmdb-js 3 with binary keys and values; the load commits one transaction per batch without fsync. */
const lmdb: OpenReadSystem = {
  async load(dir, docs, progress) {
    const db = openLmdb<Buffer, Buffer>({ path: dir, keyEncoding: 'binary', encoding: 'binary', noSync: true });
    await inBatches(docs, progress, (batch) =>
      db.transactionSync(() => {
        for (const [key, value] of batch) db.putSync(asBuffer(key), asBuffer(value));
      }),
    );
    await db.close();
  },
  open(dir) {
    const db = openLmdb<Buffer, Buffer>({ path: dir, keyEncoding: 'binary', encoding: 'binary' });
    return { get: (key) => db.get(asBuffer(key)), close: () => db.close() };
  },
};

/** classic-level (LevelDB 1.23, Snappy, 8 MiB cache) with Uint8Array keys and values. */
const classicLevel: OpenReadSystem = {
  async load(dir, docs, progress) {
    const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    await inBatches(docs, progress, (batch) => db.batch(batch.map(([key, value]) => ({ type: 'put', key, value }))));
    await db.close();
  },
  async open(dir) {
    const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    return { get: (key) => db.get(key), close: () => db.close() };
  },
};

interface RocksLevel {
  open(): Promise<void>;
  getMany(keys: Buffer[]): Promise<(Buffer | undefined)[]>;
  batch(ops: { type: 'put'; key: Buffer; value: Buffer }[]): Promise<void>;
  close(): Promise<void>;
}
type RocksLevelClass = new (location: string, options: object) => RocksLevel;

/**
 * @nxtedition/rocksdb (an optional dependency with a prebuilt binary): `compression` true is its default (zstd with
 * a 16 KiB dictionary), false writes uncompressed tables. Its `get` rejects on a miss, so reads use `getMany`, which
 * the binding's `get` is built on. It has no read-only or secondary open.
 */
function rocksdb(compression: boolean): OpenReadSystem {
  let RocksLevelCtor: RocksLevelClass | undefined;
  const ctor = (): RocksLevelClass => {
    if (RocksLevelCtor !== undefined) return RocksLevelCtor;
    try {
      ({ RocksLevel: RocksLevelCtor } = createRequire(import.meta.url)('@nxtedition/rocksdb') as {
        RocksLevel: RocksLevelClass;
      });
    } catch (error) {
      throw new SystemUnavailableError(`@nxtedition/rocksdb did not load: ${(error as Error).message.split('\n')[0]}`);
    }
    return RocksLevelCtor;
  };
  const openDb = async (dir: string): Promise<RocksLevel> => {
    const db = new (ctor())(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', compression });
    await db.open();
    return db;
  };
  return {
    async load(dir, docs, progress) {
      const db = await openDb(dir);
      await inBatches(docs, progress, (batch) =>
        db.batch(batch.map(([key, value]) => ({ type: 'put', key: asBuffer(key), value: asBuffer(value) }))),
      );
      await db.close();
    },
    async open(dir) {
      const db = await openDb(dir);
      return { get: async (key) => (await db.getMany([asBuffer(key)]))[0], close: () => db.close() };
    },
  };
}

/** How a heapless reader opens the loaded directory: as a writer would, read-only, or as a follower. */
type HeaplessOpen = 'write' | 'read-only' | 'follower';

/**
 * @heapless/engine with `options` for the load; the reader opens with defaults (each block names its codec), and a
 * read-only or follower reader opens while a writer holds the directory, as beside a service that owns it.
 */
function heapless(options: EngineOptions, how: HeaplessOpen = 'write'): OpenReadSystem {
  const openReader = (dir: string): Promise<Engine> =>
    how === 'follower' ? openFollower(dir) : Engine.open(dir, { readOnly: how === 'read-only' });
  return {
    async load(dir, docs, progress) {
      const engine = await Engine.open(dir, options);
      await inBatches(docs, progress, (batch) => {
        const b = engine.batch();
        for (const [key, value] of batch) b.put(key, value);
        return b.write();
      });
      await engine.close();
    },
    async open(dir) {
      const engine = await openReader(dir);
      return { get: (key) => engine.get(key), close: () => engine.close() };
    },
    holdWriter: how === 'write' ? undefined : (dir) => Engine.open(dir),
  };
}

/** True where node:zlib has zstd (Node 22.15 / 23.8 on), which writing zstd tables needs. */
export function zstdWritable(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 8) || (major === 22 && minor >= 15);
}

/** heapless with zstd tables; on a Node without zstd writing, unavailable (the load says why). */
function heaplessZstd(): OpenReadSystem {
  const system = heapless({ compression: 'zstd' });
  return {
    ...system,
    load(dir, docs, progress) {
      if (!zstdWritable()) {
        throw new SystemUnavailableError(`writing zstd needs Node >= 22.15 or 23.8 (this is ${process.versions.node})`);
      }
      return system.load(dir, docs, progress);
    },
  };
}

/** The system named `name`. */
export function openReadSystem(name: OpenReadSystemName): OpenReadSystem {
  switch (name) {
    case 'lmdb':
      return lmdb;
    case 'classic-level':
      return classicLevel;
    case 'rocksdb':
      return rocksdb(true);
    case 'rocksdb-none':
      return rocksdb(false);
    case 'heapless':
      return heapless({});
    case 'heapless-deflate':
      return heapless({ compression: 'deflate' });
    case 'heapless-none':
      return heapless({ compression: 'none' });
    case 'heapless-zstd':
      return heaplessZstd();
    case 'heapless-read-only':
      return heapless({}, 'read-only');
    case 'heapless-follower':
      return heapless({}, 'follower');
  }
}
