import { describe, expect, it } from 'vitest';
import { Block } from './block.js';
import { BlockBuilder } from './block-builder.js';
import { BlockCache } from './block-cache.js';

function block(bytes: number): Block {
  const b = new BlockBuilder(16);
  b.add(new Uint8Array(8), new Uint8Array(Math.max(0, bytes - 20)));
  return new Block(b.finish().slice(), 'x.sst', 0);
}

describe('block cache', () => {
  it('returns what was inserted, keyed by file and offset', () => {
    const c = new BlockCache({ capacity: 1 << 20 });
    const a = block(100);
    const b = block(100);
    c.insert(1, 0, a);
    c.insert(2, 0, b);
    expect(c.get(1, 0)).toBe(a);
    expect(c.get(2, 0)).toBe(b);
    expect(c.get(1, 4096)).toBeUndefined();
    expect(c.stats()).toMatchObject({ hits: 2, misses: 1, blocks: 2 });
  });

  it('evicts the least recently used blocks to stay within capacity', () => {
    const one = block(1000).charge + 128;
    const c = new BlockCache({ capacity: one * 3 });
    for (let i = 0; i < 3; i++) c.insert(1, i * 1000, block(1000));
    expect(c.size).toBe(3);
    c.get(1, 0); // 0 is now the most recent; 1000 the least
    c.insert(1, 3000, block(1000));
    expect(c.size).toBe(3);
    expect(c.get(1, 1000)).toBeUndefined();
    expect(c.get(1, 0)).toBeDefined();
    expect(c.get(1, 2000)).toBeDefined();
    expect(c.get(1, 3000)).toBeDefined();
    expect(c.usage).toBeLessThanOrEqual(c.capacity);
  });

  it('replaces a block inserted twice without double charging', () => {
    const c = new BlockCache({ capacity: 1 << 20 });
    c.insert(1, 0, block(500));
    const usage = c.usage;
    const again = block(500);
    c.insert(1, 0, again);
    expect(c.usage).toBe(usage);
    expect(c.get(1, 0)).toBe(again);
  });

  it('does not cache a block larger than the whole capacity', () => {
    const c = new BlockCache({ capacity: 100 });
    c.insert(1, 0, block(1000));
    expect(c.size).toBe(0);
    expect(c.usage).toBe(0);
  });

  it('evicts every block of one file and nothing else', () => {
    const c = new BlockCache({ capacity: 1 << 20 });
    for (let f = 1; f <= 3; f++) for (let o = 0; o < 5; o++) c.insert(f, o * 4096, block(100));
    c.evictFile(2);
    expect(c.size).toBe(10);
    for (let o = 0; o < 5; o++) {
      expect(c.get(2, o * 4096)).toBeUndefined();
      expect(c.get(1, o * 4096)).toBeDefined();
      expect(c.get(3, o * 4096)).toBeDefined();
    }
    c.clear();
    expect(c.size).toBe(0);
    expect(c.usage).toBe(0);
  });

  it('rejects a negative capacity', () => {
    expect(() => new BlockCache({ capacity: -1 })).toThrow(/capacity/);
  });
});
