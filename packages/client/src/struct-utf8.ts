/**
 * UTF-8 for struct string fields, written by hand so that encoding never allocates (no TextEncoder result object,
 * no temporary array) and so that the bytes are exactly those `@heapless/offheap` writes: a lone surrogate encodes
 * as U+FFFD (EF BF BD), as TextEncoder does. Decoding reads short ASCII strings byte by byte and hands anything else
 * to a TextDecoder (replacement characters for invalid sequences, as WHATWG specifies).
 */

/** What string reads need of a TextDecoder (typed here: the package's types know no DOM). */
export interface Utf8Decoder {
  decode(input: Uint8Array): string;
}

/** UTF-8 byte length of `s` (lone surrogates count as the 3 bytes of U+FFFD). */
export function utf8Length(s: string): number {
  let n = 0;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** Writes the UTF-8 encoding of `s` into `dst` at `off` (the caller checked it fits); returns the bytes written. */
export function writeUtf8(s: string, dst: Uint8Array, off: number): number {
  const start = off;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      dst[off++] = c;
      continue;
    }
    if (c < 0x800) {
      dst[off++] = 0xc0 | (c >> 6);
      dst[off++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < len ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        dst[off++] = 0xf0 | (c >> 18);
        dst[off++] = 0x80 | ((c >> 12) & 0x3f);
        dst[off++] = 0x80 | ((c >> 6) & 0x3f);
        dst[off++] = 0x80 | (c & 0x3f);
        continue;
      }
      c = 0xfffd;
    }
    dst[off++] = 0xe0 | (c >> 12);
    dst[off++] = 0x80 | ((c >> 6) & 0x3f);
    dst[off++] = 0x80 | (c & 0x3f);
  }
  return off - start;
}

/**
 * Below this many bytes an ASCII string is built code unit by code unit; above it, or at the first non-ASCII byte,
 * TextDecoder is cheaper than the concatenations (the same cut msgpackr makes for its short strings).
 */
const SHORT_ASCII = 16;

/** The string in `n` bytes of `u8` at `off`; `td` is the caller's (instance-owned) decoder. */
export function readUtf8(u8: Uint8Array, off: number, n: number, td: Utf8Decoder): string {
  if (n <= SHORT_ASCII) {
    let s = '';
    let i = 0;
    for (; i < n; i++) {
      const c = u8[off + i]!;
      if (c >= 0x80) break;
      s += String.fromCharCode(c);
    }
    if (i === n) return s;
  }
  return td.decode(u8.subarray(off, off + n));
}
