import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from './engine.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-keys-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const invalid = { code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT', message: expect.stringMatching(/well-formed/) };

describe('string keys', () => {
  it('refuses ill-formed UTF-16 keys everywhere a key is encoded, so that no two strings share a key', async () => {
    const db = await Engine.open(dir);
    try {
      await db.put('\ufffd', 'replacement');
      for (const bad of ['\ud800', 'a\udc00b', `${'x'.repeat(70)}\ud83d`]) {
        await expect(db.put(bad, 'v')).rejects.toMatchObject(invalid);
        await expect(db.delete(bad)).rejects.toMatchObject(invalid);
        await expect(db.write([{ type: 'put', key: bad, value: 'v' }])).rejects.toMatchObject(invalid);
        expect(() => db.getSync(bad)).toThrow(expect.objectContaining(invalid));
        await expect(db.getMany(['ok', bad])).rejects.toMatchObject(invalid);
        expect(() => db.iterator({ gte: bad })).toThrow(expect.objectContaining(invalid));
        await expect(db.compactRange(bad)).rejects.toMatchObject(invalid);
      }
      // Nothing was written by the refused calls, and the replacement character is its own key.
      expect(Buffer.from(db.getSync('\ufffd')!).toString()).toBe('replacement');
      const keys: string[] = [];
      for await (const [k] of db.iterator()) keys.push(Buffer.from(k).toString());
      expect(keys).toEqual(['\ufffd']);
      // Well-formed non-ASCII keys (a surrogate pair, long keys past the ASCII fast path) still work.
      await db.put('😀'.repeat(40), 'pair');
      expect(Buffer.from(db.getSync('😀'.repeat(40))!).toString()).toBe('pair');
    } finally {
      await db.close();
    }
  });
});
