import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../map/offheap-map.js';
import { MAP_RECORD_RANGE, mapEngineKey, mapRecordKey, readMapMeta } from './map-keys.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'offheap-map-keys-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

describe('map keys for tools', () => {
  it("tells a map's directory, its records from its metadata, and a record's engine key", async () => {
    const map = await OffHeapMap.open<string, number>({ dir: join(dir, 'map') });
    map.set('h:1', 1);
    await map.meta.set('schema', Uint8Array.of(7));
    await map.close();
    const engine = await Engine.open(join(dir, 'map'), { readOnly: true });
    try {
      expect(readMapMeta(engine)).toEqual({ format: 2, keys: 'string', codec: 'msgpack', struct: null });
      const seen: string[] = [];
      for await (const [k] of engine.iterator({ values: false })) {
        const what = mapEngineKey(k)!;
        seen.push(`${what.kind}:${text(what.name)}`);
      }
      expect(seen).toContain('record:h:1');
      expect(seen).toContain('user-meta:schema');
      expect(seen).toContain('map-meta:meta');
      const key = mapRecordKey(Buffer.from('h:1'));
      expect(engine.getSync(key)).toBeDefined();
      const records: string[] = [];
      for await (const [k] of engine.iterator({ ...MAP_RECORD_RANGE, values: false }))
        records.push(text(k.subarray(1)));
      expect(records).toEqual(['h:1']);
    } finally {
      await engine.close();
    }
  });

  it("finds no map in an engine without the meta key, or with one that is not a map's", async () => {
    const engine = await Engine.open(join(dir, 'plain'));
    try {
      expect(readMapMeta(engine)).toBeUndefined();
      await engine.put(Buffer.from('\0meta', 'latin1'), 'not msgpack of a map');
      expect(readMapMeta(engine)).toBeUndefined();
      expect(mapEngineKey(Uint8Array.of(9, 1))).toBeUndefined();
    } finally {
      await engine.close();
    }
  });
});
