/**
 * Memtable insert and get, random order, in a memtable of the default write buffer (4 MiB): keys of the server's
 * shape (a namespace byte, then `key:` and a decimal number: a common prefix, as most real key spaces have) and
 * 100-byte values. Each bench call does OPS operations, so ns/op = the reported mean (ms) * 1e6 / OPS.
 *
 *   npx vitest bench --run packages/engine/src/memtable/memtable.bench.ts
 *
 * Not part of the test suite (vitest runs *.bench.ts only under `vitest bench`).
 */
import { bench, describe } from 'vitest';
import { ValueKind } from '../base/internal-key.js';
import { Memtable } from './memtable.js';

const CAPACITY = 4 * 1024 * 1024;
const OPS = 10_000;
const KEYS = 100_000;
const value = new Uint8Array(100).map((_, i) => i);
const keys = Array.from({ length: KEYS }, (_, i) => Buffer.from(`\u0001key:${(i * 7919) % KEYS}`));

let table = new Memtable(CAPACITY);
let seq = 1;
let next = 0;

describe('memtable, 100-byte values, keys with a common prefix', () => {
  bench(`add ×${OPS} (random keys, a fresh memtable when full)`, () => {
    for (let i = 0; i < OPS; i++) {
      const k = keys[next++ % KEYS]!;
      if (!table.hasRoom(k.length, value.length)) table = new Memtable(CAPACITY, undefined, table);
      table.add(seq++, ValueKind.Value, k, 0, k.length, value, 0, value.length);
    }
  });

  bench(`get ×${OPS} (older snapshot: the skiplist walk)`, () => {
    for (let i = 0; i < OPS; i++) {
      const k = keys[(next + i * 31) % KEYS]!;
      table.get(k, 0, k.length, 1);
    }
  });
});
