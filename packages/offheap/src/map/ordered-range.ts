/**
 * Ordered reads of a map (`OffHeapMap.range`): which key bytes a range selects, and, for a memory-only map, which
 * records of the hash index are the first ones of a range.
 *
 * Order is the byte order of the keys (for string keys, of their UTF-8: Unicode code point order). A persisted map
 * reads its keys in that order from the engine's sorted iterator (persist/persistence.ts), so a page costs a seek and the
 * page; a memory-only map has no ordered index, and a page costs one pass over the hash index (`firstInRange`),
 * comparing key bytes where they lie in the arena and keeping the page's records in a bounded heap.
 */

import { compareBytesAt } from '@heapless/engine';
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import { illFormedKey, utf8Length, writeUtf8 } from '../key-bytes.js';
import { type Arena, LOC_TOMBSTONE, locOffset, locSegment, NO_EXPIRY, RECORD_HEADER_BYTES } from '../memory/arena.js';
import type { HashTable } from '../memory/hash-table.js';
import type { MapPersistence } from '../persist/persistence.js';
import { copyOf } from '../shared/copy-of.js';

/** What `range` selects: keys starting with `prefix`, at or after `gte` / after `gt`, before `lt`. */
export interface RangeOptions<K> {
  prefix?: K;
  gte?: K;
  /** Exclusive lower bound: the last key of the previous page, to read the next one. */
  gt?: K;
  lt?: K;
  /** Entries at most (default 100). */
  limit?: number;
  /** Stop the page once its keys and values take this many bytes (it always holds at least one entry). */
  maxBytes?: number;
}

/** One page of `range`: entries in key order with a copy of each value's stored bytes, and whether more follow. */
export interface RangePage<K> {
  entries: [K, Uint8Array][];
  more: boolean;
}

/** Key bytes from `lower` (inclusive) to `upper` (exclusive; null: no end). */
export interface KeyRange {
  lower: Uint8Array;
  upper: Uint8Array | null;
}

const EMPTY: Uint8Array = new Uint8Array(0);

function keyBytes(k: unknown, strings: boolean, what: string): Uint8Array {
  if (strings) {
    if (typeof k !== 'string') throw invalidArgument(`range: ${what} must be a string, got ${typeof k}`);
    if (!k.isWellFormed()) throw illFormedKey(k);
    const out = new Uint8Array(utf8Length(k));
    writeUtf8(k, out, 0);
    return out;
  }
  if (!(k instanceof Uint8Array)) throw invalidArgument(`range: ${what} must be a Uint8Array`);
  return k;
}

/** The smallest key after `k`: `k` then a zero byte. */
function successor(k: Uint8Array): Uint8Array {
  const out = new Uint8Array(k.length + 1);
  out.set(k);
  return out;
}

/** The smallest key that does not start with `p` and sorts after every key that does (null: none, p is all 0xff). */
function prefixEnd(p: Uint8Array): Uint8Array | null {
  let n = p.length;
  while (n > 0 && p[n - 1] === 0xff) n--;
  if (n === 0) return null;
  const out = new Uint8Array(n); // a copy: `p` may be the caller's Buffer, whose slice() is a view
  out.set(p.subarray(0, n));
  out[n - 1]!++;
  return out;
}

function max(a: Uint8Array, b: Uint8Array): Uint8Array {
  return compareBytesAt(a, 0, a.length, b, 0, b.length) >= 0 ? a : b;
}

function min(a: Uint8Array | null, b: Uint8Array | null): Uint8Array | null {
  if (a === null) return b;
  if (b === null) return a;
  return compareBytesAt(a, 0, a.length, b, 0, b.length) <= 0 ? a : b;
}

/**
 * The key bytes `options` select, or null when they select nothing. Throws INVALID_ARGUMENT for a bound of the
 * wrong kind, or a string bound that is not well-formed UTF-16 (it has no bytes: a key never equals it).
 */
export function keyRangeOf<K>(options: RangeOptions<K>, strings: boolean): KeyRange | null {
  let lower: Uint8Array = EMPTY;
  let upper: Uint8Array | null = null;
  if (options.prefix !== undefined) {
    lower = keyBytes(options.prefix, strings, 'prefix');
    upper = prefixEnd(lower);
  }
  if (options.gte !== undefined) lower = max(lower, keyBytes(options.gte, strings, 'gte'));
  if (options.gt !== undefined) lower = max(lower, successor(keyBytes(options.gt, strings, 'gt')));
  if (options.lt !== undefined) upper = min(upper, keyBytes(options.lt, strings, 'lt'));
  if (upper !== null && compareBytesAt(lower, 0, lower.length, upper, 0, upper.length) >= 0) return null;
  return { lower, upper };
}

/**
 * One page of `range` (see `OffHeapMap.range`): from the engine's sorted iterator when the map is persisted, else
 * from one pass over the hash `tables`. Throws INVALID_ARGUMENT, PERSIST_FAILED, or the engine's errors.
 */
export function rangePage<K>(
  options: RangeOptions<K>,
  keysAreStrings: boolean,
  persistence: MapPersistence | null,
  tables: readonly HashTable[],
  arena: Arena,
  now: number,
): RangePage<K> {
  if (typeof options !== 'object' || options === null) throw invalidArgument('range(options: object)');
  const limit = options.limit ?? 100;
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  if (!Number.isInteger(limit) || limit < 1) throw invalidArgument('range: limit must be an integer ≥ 1');
  if (!(maxBytes >= 1)) throw invalidArgument('range: maxBytes must be ≥ 1');
  if (persistence !== null && persistence.failure !== undefined) {
    throw new OffHeapError(
      OffHeapErrorCodes.PERSIST_FAILED,
      'an earlier engine write failed: the engine may not hold every key of the map, so it cannot order them',
      { cause: persistence.failure },
    );
  }
  const page: RangePage<K> = { entries: [], more: false };
  const range = keyRangeOf(options, keysAreStrings);
  if (range === null) return page;
  let bytes = 0;
  /** Adds the entry (key `b[off, off+len)`, `vlen` value bytes at `voff`) to the page, or says the page is full. */
  const add = (b: Buffer, off: number, len: number, voff: number, vlen: number): boolean => {
    if (page.entries.length === limit || bytes >= maxBytes) {
      page.more = true;
      return false;
    }
    const key = (keysAreStrings ? Buffer.prototype.utf8Slice.call(b, off, off + len) : copyOf(b, off, off + len)) as K;
    page.entries.push([key, copyOf(b, voff, voff + vlen)]);
    bytes += len + vlen;
    return true;
  };
  if (persistence !== null) {
    persistence.entriesInRange(range.lower, range.upper, now, add);
    return page;
  }
  for (const loc of firstInRange(tables, arena, range, limit + 1, now)) {
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const klen = arena.keyLength(seg, off);
    const k = off + RECORD_HEADER_BYTES;
    if (!add(arena.u8[seg]!, k, klen, k + klen, arena.valueLength(seg, off))) break;
  }
  return page;
}

/**
 * The locations of the first `n` records (in key order) of `range` among the live slots of `tables`, sorted: one
 * pass over every slot, each key compared in place (no copy, no string), the best `n` kept in a max-heap.
 */
export function firstInRange(
  tables: readonly HashTable[],
  arena: Arena,
  range: KeyRange,
  n: number,
  now: number,
): number[] {
  const { lower, upper } = range;
  const heap: number[] = [];
  const u8 = arena.u8;
  /** Compares the keys of the records at two locations. */
  const cmp = (x: number, y: number): number => {
    const xs = locSegment(x);
    const xo = locOffset(x);
    const ys = locSegment(y);
    const yo = locOffset(y);
    return compareBytesAt(
      u8[xs]!,
      xo + RECORD_HEADER_BYTES,
      arena.keyLength(xs, xo),
      u8[ys]!,
      yo + RECORD_HEADER_BYTES,
      arena.keyLength(ys, yo),
    );
  };
  for (const t of tables) {
    const slots = t.slots;
    for (let i = 0; i < t.capacity; i++) {
      const loc = slots[i * 2 + 1]!;
      if (loc <= LOC_TOMBSTONE) continue;
      const seg = locSegment(loc);
      const off = locOffset(loc);
      const b = u8[seg]!;
      const len = arena.keyLength(seg, off);
      const start = off + RECORD_HEADER_BYTES;
      if (compareBytesAt(b, start, len, lower, 0, lower.length) < 0) continue;
      if (upper !== null && compareBytesAt(b, start, len, upper, 0, upper.length) >= 0) continue;
      const expiresAt = arena.expiresAt(seg, off);
      if (expiresAt !== NO_EXPIRY && expiresAt <= now) continue;
      if (heap.length < n) {
        heap.push(loc);
        siftUp(heap, heap.length - 1, cmp);
      } else if (cmp(loc, heap[0]!) < 0) {
        heap[0] = loc;
        siftDown(heap, 0, cmp);
      }
    }
  }
  return heap.sort(cmp);
}

/** Max-heap: the parent of `i` is not smaller. */
function siftUp(heap: number[], i: number, cmp: (x: number, y: number) => number): void {
  const x = heap[i]!;
  while (i > 0) {
    const parent = (i - 1) >>> 1;
    if (cmp(heap[parent]!, x) >= 0) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = x;
}

function siftDown(heap: number[], i: number, cmp: (x: number, y: number) => number): void {
  const x = heap[i]!;
  const n = heap.length;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && cmp(heap[child + 1]!, heap[child]!) > 0) child++;
    if (cmp(heap[child]!, x) <= 0) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = x;
}
