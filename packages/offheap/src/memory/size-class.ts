/**
 * Arena blocks come in size classes so that a freed block can be reused by any later record of the same class
 * without searching. Sizes are in 8-byte units (records are 8-byte aligned so that the header's u32 and u16 are
 * aligned for typed-array reads).
 *
 * - classes 0..127: exactly 1..128 units (8..1024 bytes), so small records, the common case, waste at most 7 bytes;
 * - classes 128..239: eight steps per power of two from 1 KiB up to 16 MiB, so a large record wastes at most 12.5%.
 *
 * The 240 classes fit the header's u8 class field; 16 MiB is the largest segment (see arena.ts).
 */

/** Number of classes; class ids fit in a u8. */
export const SIZE_CLASS_COUNT = 240;
const EXACT_UNITS = 128;

/** Class of a block that must hold `units` 8-byte units (1 ≤ units ≤ 2^21). */
export function sizeClassOf(units: number): number {
  if (units <= EXACT_UNITS) return units - 1;
  const e = 31 - Math.clz32(units - 1); // 2^e < units ≤ 2^(e+1)
  const step = 1 << (e - 3);
  const k = Math.ceil((units - (1 << e)) / step); // 1..8
  return EXACT_UNITS + (e - 7) * 8 + (k - 1);
}

/** Units held by a block of class `c`. */
export function sizeClassUnits(c: number): number {
  if (c < EXACT_UNITS) return c + 1;
  const e = ((c - EXACT_UNITS) >> 3) + 7;
  const k = ((c - EXACT_UNITS) & 7) + 1;
  return (1 << e) + k * (1 << (e - 3));
}

/** Largest class whose blocks fit in `units` (used to recycle a segment's unusable tail); -1 if none. */
export function sizeClassFloor(units: number): number {
  if (units < 1) return -1;
  const c = sizeClassOf(units);
  return sizeClassUnits(c) === units ? c : c - 1;
}
