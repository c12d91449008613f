import { describe, expect, it } from 'vitest';
import { BloomFilter, BloomFilterBuilder, bloomHash, bloomProbes } from './bloom.js';

const enc = new TextEncoder();

function key(i: number): Uint8Array {
  return enc.encode(`user:${i}`);
}

function build(n: number, bitsPerKey: number, offset = 0): BloomFilter {
  const b = new BloomFilterBuilder(bitsPerKey);
  for (let i = 0; i < n; i++) {
    const k = key(i + offset);
    b.addKey(k, 0, k.length);
  }
  return new BloomFilter(b.finish());
}

function fpRate(f: BloomFilter, probes: number): number {
  let hits = 0;
  for (let i = 0; i < probes; i++) if (f.mayContain(enc.encode(`absent:${i}`))) hits++;
  return hits / probes;
}

describe('bloom filter', () => {
  it('has no false negatives', () => {
    for (const n of [1, 10, 1000]) {
      const f = build(n, 10);
      for (let i = 0; i < n; i++) expect(f.mayContain(key(i))).toBe(true);
    }
  });

  it('has a false-positive rate near 1% at 10 bits per key', () => {
    const f = build(10_000, 10);
    const rate = fpRate(f, 100_000);
    expect(rate).toBeLessThan(0.02);
    expect(rate).toBeGreaterThan(0.002); // a filter that answers "no" to everything would also pass the line above
  });

  it('trades bits for false positives', () => {
    expect(fpRate(build(5000, 4), 20_000)).toBeGreaterThan(fpRate(build(5000, 16), 20_000));
    expect(fpRate(build(5000, 16), 20_000)).toBeLessThan(0.002);
  });

  it('hashes in place: a key inside a larger buffer hashes like the key alone', () => {
    const k = enc.encode('hello world');
    const big = new Uint8Array(k.length + 10);
    big.set(k, 5);
    expect(bloomHash(big, 5, k.length)).toBe(bloomHash(k, 0, k.length));
    // Murmur3 x86_32 tails of 1, 2 and 3 bytes all matter.
    const seen = new Set<number>();
    for (let len = 0; len <= 8; len++) seen.add(bloomHash(enc.encode('abcdefgh'), 0, len));
    expect(seen.size).toBe(9);
  });

  it('is MurmurHash3 x86_32 with a fixed seed (the hash is part of the file format)', () => {
    expect([
      bloomHash(new Uint8Array(0), 0, 0),
      bloomHash(enc.encode('a'), 0, 1),
      bloomHash(enc.encode('heapless'), 0, 8),
    ]).toEqual([1058500998, 1840933717, 535346314]);
  });

  it('reads empty and reserved encodings as "may contain"', () => {
    expect(new BloomFilter(new Uint8Array(0)).mayContain(key(1))).toBe(true);
    const reserved = new Uint8Array(9);
    reserved[8] = 31;
    expect(new BloomFilter(reserved).mayContain(key(1))).toBe(true);
  });

  it('chooses probes as bits * ln 2', () => {
    expect(bloomProbes(10)).toBe(7);
    expect(bloomProbes(1)).toBe(1);
    expect(bloomProbes(100)).toBe(30);
  });
});
