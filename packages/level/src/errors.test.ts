import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorruptionError, MAX_KEY_SIZE, MAX_VALUE_SIZE } from '@heapless/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HeaplessLevel, HeaplessLevelError, LevelErrorCodes } from './index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-level-errors-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The rejection of `p` (fails the test if `p` resolves). */
async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; cause?: unknown }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

describe('engine errors in Level codes', () => {
  it('documents every code it raises in the README', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const code of Object.values(LevelErrorCodes))
      expect(readme).toMatch(new RegExp(`^\\|\\s*\`${code}\`\\s*\\|`, 'm'));
  });

  it('a second open of a directory fails with LEVEL_LOCKED, the engine error as its cause', async () => {
    const a = new HeaplessLevel(dir);
    await a.open();
    const b = new HeaplessLevel(dir);
    const err = await rejection(b.open());
    expect(err.code).toBe('LEVEL_DATABASE_NOT_OPEN');
    const cause = err.cause as HeaplessLevelError;
    expect(cause).toBeInstanceOf(HeaplessLevelError);
    expect(cause.code).toBe('LEVEL_LOCKED');
    expect((cause.cause as { code: string }).code).toBe('HEAPLESS_ERR_ENGINE_LOCKED');
    await a.close();
    await b.open(); // the lock went with the first close
    await b.close();
  });

  it('createIfMissing: false and errorIfExists: true fail with LEVEL_NOT_FOUND, saying which', async () => {
    const missing = new HeaplessLevel(join(dir, 'nothing-here'), { createIfMissing: false });
    const err = await rejection(missing.open());
    expect((err.cause as HeaplessLevelError).code).toBe('LEVEL_NOT_FOUND');
    expect((err.cause as Error).message).toMatch(/does not exist/);
    expect(((err.cause as HeaplessLevelError).cause as { code: string }).code).toBe('HEAPLESS_ERR_ENGINE_NOT_FOUND');

    const db = new HeaplessLevel(dir);
    await db.open();
    await db.close();
    const again = await rejection(db.open({ errorIfExists: true }));
    expect((again.cause as HeaplessLevelError).code).toBe('LEVEL_NOT_FOUND');
    expect((again.cause as Error).message).toMatch(/already exists/);
    expect(((again.cause as HeaplessLevelError).cause as { code: string }).code).toBe('HEAPLESS_ERR_ENGINE_EXISTS');
  });

  it('a bad engine option fails the open with a TypeError (a programming mistake) caused by the engine', async () => {
    const db = new HeaplessLevel(dir, { blockSize: 1 });
    const err = await rejection(db.open());
    expect(err.code).toBe('LEVEL_DATABASE_NOT_OPEN');
    expect(err.cause).toBeInstanceOf(TypeError);
    expect(((err.cause as Error).cause as { code: string }).code).toBe('HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT');
    expect((err.cause as Error).message).toMatch(/blockSize/);
  });

  it('an oversized key is LEVEL_INVALID_KEY and an oversized value LEVEL_INVALID_VALUE, in every write form', async () => {
    const db = new HeaplessLevel<string, string | Buffer>(dir);
    const bigKey = 'k'.repeat(MAX_KEY_SIZE + 1);
    const bigValue = Buffer.alloc(MAX_VALUE_SIZE + 1);
    expect((await rejection(db.put(bigKey, 'v'))).code).toBe('LEVEL_INVALID_KEY');
    expect((await rejection(db.del(bigKey))).code).toBe('LEVEL_INVALID_KEY');
    expect((await rejection(db.put('k', bigValue, { valueEncoding: 'buffer' }))).code).toBe('LEVEL_INVALID_VALUE');
    const ops = [
      { type: 'put' as const, key: 'a', value: 'fine' },
      { type: 'put' as const, key: bigKey, value: 'v' },
    ];
    const batchErr = await rejection(db.batch(ops));
    expect(batchErr.code).toBe('LEVEL_INVALID_KEY');
    expect((batchErr.cause as { code: string }).code).toBe('HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT');
    const chained = db.batch();
    expect(() => chained.put('k', bigValue, { valueEncoding: 'buffer' })).toThrow(
      expect.objectContaining({ code: 'LEVEL_INVALID_VALUE' }),
    );
    expect(() => chained.del(bigKey)).toThrow(expect.objectContaining({ code: 'LEVEL_INVALID_KEY' }));
    await chained.close();
    // Nothing of a refused batch was applied.
    expect(await db.get('a')).toBeUndefined();
    await db.close();
  });

  it('a damaged table is LEVEL_CORRUPTION, with the CorruptionError naming the file as its cause', async () => {
    const db = new HeaplessLevel(dir, { writeBufferSize: 4096 });
    const ops = Array.from({ length: 2000 }, (_, i) => ({
      type: 'put' as const,
      key: `key${String(i).padStart(5, '0')}`,
      value: `value ${i} `.repeat(8),
    }));
    for (let i = 0; i < ops.length; i += 100) await db.batch(ops.slice(i, i + 100));
    await db.close();
    const table = readdirSync(dir).find((name) => name.endsWith('.sst'));
    expect(table).toBeDefined();
    const path = join(dir, table!);
    const bytes = readFileSync(path);
    bytes[20] = bytes[20]! ^ 0xff; // inside the first data block
    writeFileSync(path, bytes);

    await db.open();
    const err = await rejection(db.iterator().all());
    expect(err.code).toBe('LEVEL_CORRUPTION');
    expect(err.cause).toBeInstanceOf(CorruptionError);
    expect((err.cause as CorruptionError).file).toContain(table!);
    await db.close();
  });
});
