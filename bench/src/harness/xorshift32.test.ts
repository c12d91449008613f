import { describe, expect, it } from 'vitest';
import { Xorshift32 } from './xorshift32.js';

describe('Xorshift32', () => {
  it('repeats the same sequence for the same seed and stays within bounds', () => {
    const a = new Xorshift32(42);
    const b = new Xorshift32(42);
    const seen = new Set<number>();
    for (let i = 0; i < 10_000; i++) {
      const x = a.below(100);
      expect(b.below(100)).toBe(x);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(100);
      seen.add(x);
    }
    expect(seen.size).toBe(100);
  });

  it('does not get stuck on a zero seed', () => {
    expect(new Xorshift32(0).next()).not.toBe(0);
  });
});
