/**
 * A copy of `b[start, end)`. (`slice` would not do: the arena's and the engine scratch's views are Buffers, whose
 * `slice` is a view of the same memory, which the map reuses.) A small copy comes from Node's Buffer pool, which
 * costs far less than an ArrayBuffer of its own (and the external-memory GCs that many of them start).
 */
export function copyOf(b: Buffer, start: number, end: number): Uint8Array {
  const out = Buffer.allocUnsafe(end - start);
  b.copy(out, 0, start, end); // no view of the source made on the way
  return out;
}
