import type { ScalarType } from './field-type.js';
import type { StructErrors } from './struct-errors.js';

/** Reads one scalar, little-endian, at byte `o` of `dv` (unaligned is fine: DataView). */
export function readScalar(t: ScalarType, dv: DataView, o: number): number | bigint | boolean {
  switch (t) {
    case 'u8':
      return dv.getUint8(o);
    case 'i8':
      return dv.getInt8(o);
    case 'bool':
      return dv.getUint8(o) !== 0;
    case 'u16':
      return dv.getUint16(o, true);
    case 'i16':
      return dv.getInt16(o, true);
    case 'u32':
      return dv.getUint32(o, true);
    case 'i32':
      return dv.getInt32(o, true);
    case 'f32':
      return dv.getFloat32(o, true);
    case 'f64':
      return dv.getFloat64(o, true);
    case 'i64':
      return dv.getBigInt64(o, true);
    case 'u64':
      return dv.getBigUint64(o, true);
  }
}

/** Writes one scalar that `checkScalar` accepted, little-endian, at byte `o` of `dv`. */
export function writeScalar(t: ScalarType, dv: DataView, o: number, v: unknown): void {
  switch (t) {
    case 'u8':
      dv.setUint8(o, v as number);
      return;
    case 'i8':
      dv.setInt8(o, v as number);
      return;
    case 'bool':
      dv.setUint8(o, v ? 1 : 0);
      return;
    case 'u16':
      dv.setUint16(o, v as number, true);
      return;
    case 'i16':
      dv.setInt16(o, v as number, true);
      return;
    case 'u32':
      dv.setUint32(o, v as number, true);
      return;
    case 'i32':
      dv.setInt32(o, v as number, true);
      return;
    case 'f32':
      dv.setFloat32(o, v as number, true);
      return;
    case 'f64':
      dv.setFloat64(o, v as number, true);
      return;
    case 'i64':
      dv.setBigInt64(o, v as bigint, true);
      return;
    case 'u64':
      dv.setBigUint64(o, v as bigint, true);
      return;
  }
}

/** The zero of an element type, what an array's missing elements are written as. */
export function zeroOf(t: ScalarType): number | bigint | boolean {
  return t === 'i64' || t === 'u64' ? 0n : t === 'bool' ? false : 0;
}

/** The range of each integer type: a value outside it does not fit, and is refused rather than wrapped. */
const INT_RANGES: Readonly<Record<'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32', readonly [number, number]>> = {
  u8: [0, 0xff],
  i8: [-0x80, 0x7f],
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffff_ffff],
  i32: [-0x8000_0000, 0x7fff_ffff],
};
const BIG_RANGES: Readonly<Record<'i64' | 'u64', readonly [bigint, bigint]>> = {
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u64: [0n, 2n ** 64n - 1n],
};

/** The overflow refusal, in the one wording both sides use. */
export function overflowError(errors: StructErrors, name: string, got: string, type: string): Error {
  return errors.overflow(`struct field ${name} got ${got}, more than ${type} holds`);
}

/**
 * The refusal of an integer outside its type's range, saying which end it passed (-1 in a `u32` is below its
 * minimum, not more than it holds).
 */
function rangeError(
  errors: StructErrors,
  name: string,
  got: string,
  t: string,
  below: boolean,
  lo: string,
  hi: string,
): Error {
  const limit = below ? `less than ${t}'s minimum ${lo}` : `more than ${t}'s maximum ${hi}`;
  return errors.overflow(`struct field ${name} got ${got}, ${limit} (range ${lo}..${hi})`);
}

/**
 * Throws `errors.value` unless `v` has the JS type of `t` (boolean, bigint or number; an integer for an integer
 * type), and `errors.overflow` for an integer outside the type's range (300 in a `u8`, 2^33 in a `u32`).
 */
export function checkScalar(t: ScalarType, v: unknown, name: string, errors: StructErrors): void {
  const want = t === 'bool' ? 'boolean' : t === 'i64' || t === 'u64' ? 'bigint' : 'number';
  if (typeof v !== want) throw errors.value(`struct field ${name} (${t}) needs a ${want}, got ${typeof v}`);
  if (t === 'bool' || t === 'f32' || t === 'f64') return;
  if (t === 'i64' || t === 'u64') {
    const [lo, hi] = BIG_RANGES[t];
    if ((v as bigint) < lo || (v as bigint) > hi) {
      throw rangeError(errors, name, String(v), t, (v as bigint) < lo, String(lo), String(hi));
    }
    return;
  }
  if (!Number.isInteger(v)) throw errors.value(`struct field ${name} (${t}) needs an integer, got ${String(v)}`);
  const [lo, hi] = INT_RANGES[t];
  if ((v as number) < lo || (v as number) > hi) {
    throw rangeError(errors, name, String(v), t, (v as number) < lo, String(lo), String(hi));
  }
}
