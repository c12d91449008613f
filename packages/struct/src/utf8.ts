/**
 * UTF-8 for string fields (and, in `@heapless/offheap`, for string keys), written by hand so that encoding never
 * allocates: no TextEncoder result object, no temporary array. A lone surrogate encodes as U+FFFD (EF BF BD), as
 * TextEncoder does. Decoding is the importing package's (`Utf8Reader`): Node has a faster decoder than browsers.
 */

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

/** Writes the UTF-8 encoding of `s` into `dst` at `off` (the caller made room); returns the bytes written. */
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
 * The string in bytes `start..end` of `u8`, invalid sequences read as U+FFFD (as WHATWG's decoder does). A layout
 * is given one by the package that makes it: Node's `Buffer` slice on the server, a TextDecoder in browsers.
 */
export type Utf8Reader = (u8: Uint8Array, start: number, end: number) => string;

/** What `textDecoderReader` needs of a TextDecoder (typed here: this package's types know neither DOM nor Node). */
export interface Utf8Decoder {
  decode(input: Uint8Array): string;
}

/**
 * Below this many bytes an ASCII string is built code unit by code unit; above it, or at the first non-ASCII byte,
 * TextDecoder is cheaper than the concatenations (the same cut msgpackr makes for its short strings).
 */
const SHORT_ASCII = 16;

/** A reader over `td` (the caller's own decoder: no module state) that builds short ASCII strings by hand. */
export function textDecoderReader(td: Utf8Decoder): Utf8Reader {
  return (u8, start, end) => {
    if (end - start <= SHORT_ASCII) {
      let s = '';
      let i = start;
      for (; i < end; i++) {
        const c = u8[i]!;
        if (c >= 0x80) break;
        s += String.fromCharCode(c);
      }
      if (i === end) return s;
    }
    return td.decode(u8.subarray(start, end));
  };
}
