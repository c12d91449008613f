import { type FieldLayout, SCALAR_SIZES, type Utf8Type } from './field-type.js';
import { checkScalar, overflowError, readScalar, writeScalar, zeroOf } from './scalar.js';
import type { StructErrors } from './struct-errors.js';
import { type Utf8Reader, utf8Length, writeUtf8 } from './utf8.js';

/**
 * One field at a time: check a value against its field, write it, read it back. Offsets are absolute in `u8`/`dv`
 * (both over the same whole buffer), so views over a frame need no subarray.
 */

/** Throws `errors.value` or `errors.overflow` unless `x` can be written to field `f`. */
export function checkField(f: FieldLayout, x: unknown, errors: StructErrors): void {
  const t = f.type;
  if (typeof t === 'string') {
    checkScalar(t, x, f.name, errors);
    return;
  }
  if (t.kind === 'utf8') {
    if (typeof x !== 'string') throw errors.value(`struct field ${f.name} needs a string, got ${typeof x}`);
    const n = utf8Length(x);
    if (n > t.maxBytes) throw overflowError(errors, f.name, `${n} UTF-8 bytes`, `utf8(${t.maxBytes})`);
    return;
  }
  if (!Array.isArray(x) && !ArrayBuffer.isView(x)) {
    throw errors.value(`struct field ${f.name} needs an array, got ${typeof x}`);
  }
  const a = x as unknown as ArrayLike<unknown>;
  if (a.length > t.length) {
    throw overflowError(errors, f.name, `${a.length} elements`, `array(${t.element}, ${t.length})`);
  }
  for (let i = 0; i < a.length; i++) checkScalar(t.element, a[i], `${f.name}[${i}]`, errors);
}

/** Writes a checked string at `o`: prefix, bytes, zeros to the end of the field (so equal values are equal bytes). */
export function writeString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number, s: string): void {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  const n = writeUtf8(s, u8, o + prefix);
  if (prefix === 1) u8[o] = n;
  else dv.setUint16(o, n, true);
  u8.fill(0, o + prefix + n, o + prefix + t.maxBytes);
}

/** Reads the string field at `o`; a length prefix beyond the field (a foreign or torn record) is cut to the field. */
export function readString(t: Utf8Type, u8: Uint8Array, dv: DataView, o: number, read: Utf8Reader): string {
  const prefix = t.maxBytes <= 0xff ? 1 : 2;
  let n = prefix === 1 ? u8[o]! : dv.getUint16(o, true);
  if (n > t.maxBytes) n = t.maxBytes;
  return read(u8, o + prefix, o + prefix + n);
}

/** Writes a checked value of field `f` of the record at `off` (an array's missing elements as zeros). */
export function writeField(f: FieldLayout, u8: Uint8Array, dv: DataView, off: number, x: unknown): void {
  const t = f.type;
  const o = off + f.offset;
  if (typeof t === 'string') {
    writeScalar(t, dv, o, x);
    return;
  }
  if (t.kind === 'utf8') {
    writeString(t, u8, dv, o, x as string);
    return;
  }
  const a = x as ArrayLike<unknown>;
  const es = SCALAR_SIZES[t.element];
  const zero = zeroOf(t.element);
  for (let i = 0; i < t.length; i++) writeScalar(t.element, dv, o + i * es, i < a.length ? a[i] : zero);
}

/** Field `f` of the record at `off` as a plain value (arrays as new arrays). */
export function readField(f: FieldLayout, u8: Uint8Array, dv: DataView, off: number, read: Utf8Reader): unknown {
  const t = f.type;
  const o = off + f.offset;
  if (typeof t === 'string') return readScalar(t, dv, o);
  if (t.kind === 'utf8') return readString(t, u8, dv, o, read);
  const es = SCALAR_SIZES[t.element];
  const out = new Array<unknown>(t.length);
  for (let i = 0; i < t.length; i++) out[i] = readScalar(t.element, dv, o + i * es);
  return out;
}
