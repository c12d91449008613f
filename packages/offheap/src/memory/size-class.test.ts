import { describe, expect, it } from 'vitest';
import { SIZE_CLASS_COUNT, sizeClassFloor, sizeClassOf, sizeClassUnits } from './size-class.js';

describe('size classes', () => {
  it('every size maps to the smallest class that holds it', () => {
    for (let u = 1; u <= 1 << 21; u += u < 4096 ? 1 : 97) {
      const c = sizeClassOf(u);
      expect(c).toBeGreaterThanOrEqual(0);
      expect(c).toBeLessThan(SIZE_CLASS_COUNT);
      expect(sizeClassUnits(c)).toBeGreaterThanOrEqual(u);
      if (c > 0) expect(sizeClassUnits(c - 1)).toBeLessThan(u);
      // waste bound: exact up to 1 KiB, then 12.5%
      expect(sizeClassUnits(c) - u).toBeLessThanOrEqual(u <= 128 ? 0 : u / 8);
    }
    expect(sizeClassOf(1 << 21)).toBe(SIZE_CLASS_COUNT - 1);
    expect(sizeClassUnits(SIZE_CLASS_COUNT - 1)).toBe(1 << 21);
  });

  it('floor gives the largest class that fits', () => {
    expect(sizeClassFloor(0)).toBe(-1);
    expect(sizeClassFloor(5)).toBe(4);
    expect(sizeClassUnits(sizeClassFloor(150))).toBe(144);
    for (let u = 1; u < 100_000; u += 13) {
      const c = sizeClassFloor(u);
      expect(sizeClassUnits(c)).toBeLessThanOrEqual(u);
      expect(sizeClassUnits(c + 1)).toBeGreaterThan(u);
    }
  });
});
