import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const opts = { minDelayMs: 100, maxDelayMs: 1000 };
  it('doubles from the minimum and stops at the maximum', () => {
    expect([0, 1, 2, 3, 4, 50].map((a) => backoffDelay(a, opts, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
  it('jitters within the upper half of the ceiling', () => {
    expect(backoffDelay(2, opts, () => 0)).toBe(200);
    expect(backoffDelay(2, opts, () => 0.5)).toBe(300);
  });
});
