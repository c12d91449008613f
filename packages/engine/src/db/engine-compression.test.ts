import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../base/errors.js';
import { type Compression, resolveOptions, ZSTD_BLOCK_SIZE } from '../base/options.js';
import { TableReader } from '../table/table-reader.js';
import { Engine } from './engine.js';

const zstdWritable = typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function';
const dec = new TextDecoder();

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-codecs-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The `compression` property of every table in the directory, with how many tables have it. */
function tableCodecs(): Map<string, number> {
  const codecs = new Map<string, number>();
  for (const f of readdirSync(dir).filter((name) => name.endsWith('.sst'))) {
    const r = TableReader.open(join(dir, f), { fileNumber: Number.parseInt(f, 10) });
    codecs.set(r.properties.compression, (codecs.get(r.properties.compression) ?? 0) + 1);
    r.close();
  }
  return codecs;
}

async function contents(db: Engine): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for await (const [k, v] of db.iterator()) m.set(dec.decode(k), dec.decode(v));
  return m;
}

describe('engine compression', () => {
  it('zstd tables default to 16 KiB blocks, other codecs to 4 KiB; a blockSize given is kept', async () => {
    expect(resolveOptions({ compression: 'zstd' }).blockSize).toBe(ZSTD_BLOCK_SIZE);
    expect(resolveOptions({ compression: 'zstd', blockSize: 4096 }).blockSize).toBe(4096);
    expect(resolveOptions({}).blockSize).toBe(4096);
    expect(resolveOptions({ compression: 'lz4' }).blockSize).toBe(4096);
    if (!zstdWritable) return;
    // The tables say it too: the same entries take a quarter of the blocks.
    const blocks: number[] = [];
    for (const options of [{ compression: 'zstd' }, { compression: 'zstd', blockSize: 4096 }] as const) {
      const db = await Engine.open(join(dir, options.compression + blocks.length), options);
      for (let i = 0; i < 2000; i++) await db.put(`key${String(i).padStart(5, '0')}`, `value ${i} `.repeat(10));
      await db.flush();
      blocks.push(db.tableProperties().reduce((n, t) => n + t.properties.dataBlocks, 0));
      await db.close();
    }
    expect(blocks[0]).toBeGreaterThan(0);
    expect(blocks[0]! * 3).toBeLessThan(blocks[1]!);
  });

  it('a database written with one codec after another reads under any default, and compaction rewrites it with the current one', async () => {
    // No compaction until the end: the tables of each codec stay as they were written.
    const noCompaction = { level0CompactionTrigger: 100, level0SlowdownTrigger: 100, level0StopTrigger: 100 };
    const model = new Map<string, string>();
    const rounds: Compression[] = ['snappy', 'lz4', 'deflate', ...(zstdWritable ? (['zstd'] as const) : [])];
    for (const [round, compression] of rounds.entries()) {
      const db = await Engine.open(dir, { compression, writeBufferSize: 64 * 1024, ...noCompaction });
      for (let i = 0; i < 3000; i++) {
        const k = `key${String((i * 7 + round * 1000) % 6000).padStart(5, '0')}`;
        if (i % 11 === 0) {
          await db.delete(k);
          model.delete(k);
        } else {
          const v = `{"round":"${compression}","i":${i},"text":"a value that repeats itself, as documents do"}`;
          await db.put(k, v);
          model.set(k, v);
        }
      }
      await db.flush();
      await db.close();
    }
    // Every round left tables of its own codec (the flush workers compressed them).
    expect([...tableCodecs().keys()].sort()).toEqual([...rounds].sort());

    for (const other of ['none', 'snappy', 'lz4'] as const) {
      const db = await Engine.open(dir, { compression: other, ...noCompaction });
      expect(await contents(db)).toEqual(model);
      for (const [k, v] of [...model].slice(0, 200)) expect(dec.decode(db.getSync(k)!)).toBe(v);
      await db.close();
    }

    // Compaction merges them all (no table just moves down: they overlap) into tables of the codec in force.
    const final: Compression = zstdWritable ? 'zstd' : 'lz4';
    const db = await Engine.open(dir, { compression: final, ...noCompaction });
    await db.compactRange();
    expect(await contents(db)).toEqual(model);
    await db.close();
    expect([...tableCodecs().keys()]).toEqual([final]);
  });

  it('refuses bad compression options at open with typed errors, touching nothing', async () => {
    const fresh = join(dir, 'db');
    await expect(Engine.open(fresh, { compression: 'lz5' as Compression })).rejects.toMatchObject({
      code: ErrorCodes.INVALID_ARGUMENT,
      message: expect.stringContaining('none, snappy, lz4, zstd, deflate'),
    });
    for (const zstdLevel of [0, 23, 2.5]) {
      await expect(Engine.open(fresh, { compression: 'zstd', zstdLevel })).rejects.toMatchObject({
        code: ErrorCodes.INVALID_ARGUMENT,
        message: expect.stringContaining('zstdLevel'),
      });
    }
    if (!zstdWritable) {
      await expect(Engine.open(fresh, { compression: 'zstd' })).rejects.toMatchObject({
        code: ErrorCodes.UNSUPPORTED,
        message: expect.stringContaining(`Node ${process.versions.node}`),
      });
    } else {
      const db = await Engine.open(fresh, { compression: 'zstd', zstdLevel: 19 });
      await db.close();
      rmSync(fresh, { recursive: true });
    }
    expect(existsSync(fresh)).toBe(false);
  });
});
