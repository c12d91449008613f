/**
 * What `pnpm bench server` measures, shared by every system so that they all run the same cases on the same data:
 * keys `key:<12 digits>` (redis-benchmark's `key:__rand_int__` with `-r N` names exactly these), values of 100
 * bytes, pipeline depths 1, 16 and 1000. Light module: the definition imports it in the parent.
 */

/** Calls in flight at once, as a batch sent together and awaited together (what `redis-benchmark -P` does). */
export const DEPTHS = [1, 16, 1000] as const;

/** Operations of the key-value cases, in table order. */
export const OPERATIONS = ['get', 'set'] as const;

/** Bytes of every value: a small record, as `redis-benchmark -d 100` writes, so the anchors measure the same. */
export const VALUE_BYTES = 100;

/** Seed 003's single-threaded Java server: 280,000 remote lookups per second. */
export const SEED_003_GETS_PER_SECOND = 280_000;

/** Time each key-value case runs before measuring (JIT, socket buffers, the server's caches). */
export const WARMUP_MS = 500;
/** Time each key-value case is measured. */
export const MEASURE_MS = 2_000;
/** Time of the HTTP case's warm-up and measurement with autocannon (whole seconds, as autocannon counts). */
export const HTTP_WARMUP_SECONDS = 1;
export const HTTP_MEASURE_SECONDS = 3;
/** Concurrent HTTP connections of autocannon (its default), each with one request at a time. */
export const HTTP_CONNECTIONS = 10;

/** Name of a key-value case, e.g. `get depth 16`. */
export function kvCaseName(operation: string, depth: number): string {
  return `${operation} depth ${depth}`;
}

/** Name of the HTTP case. */
export const HTTP_CASE = 'http GET /v1/kv/:key';

/** The key of record `i`: `key:` and 12 digits, the form redis-benchmark's `__rand_int__` takes. */
export function keyOf(i: number): string {
  return `key:${String(i).padStart(12, '0')}`;
}

/**
 * A 100-byte value that is also valid msgpack (a str8 of 98 `x`: 0xd9, length, bytes), so that heapless's JSON
 * routes could decode it too; heapless stores and returns it as these bytes.
 */
export function hundredByteValue(): Buffer {
  const value = Buffer.alloc(VALUE_BYTES, 'x'.charCodeAt(0));
  value[0] = 0xd9;
  value[1] = VALUE_BYTES - 2;
  return value;
}
