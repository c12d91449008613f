/**
 * Keys are bytes. A string key is its UTF-8 encoding, computed here so that hashing, comparing and copying a
 * string key never allocates for ASCII keys (no TextEncoder round trip, no temporary Uint8Array). A string key must
 * be well-formed UTF-16: one with a lone surrogate has no UTF-8 encoding of its own (TextEncoder would write U+FFFD,
 * the encoding of another key), so `hashString` refuses it. The encoder, `writeUtf8`, still writes U+FFFD for a
 * lone surrogate: it is `@heapless/struct`'s, shared with struct string fields, which take any string.
 *
 * The hash is MurmurHash3 (x86, 32-bit; the engine's, `@heapless/engine/murmur3`) of the UTF-8 bytes, read as
 * little-endian 4-byte words: an ASCII string is hashed four code units per round straight from the string, other
 * strings are first encoded into the hasher's scratch buffer. The same bytes give the same hash whether they come from a string or a Uint8Array, which is what
 * lets a map rebuilt from the engine's byte keys answer lookups by string. The result is an int32 (a small integer
 * for V8: no heap number between hash, probe and compare).
 */

import { isUtf8 } from 'node:buffer';
import { murmur3, murmurFinish, murmurRound } from '@heapless/engine/murmur3';
import { utf8Length, writeUtf8 } from '@heapless/struct';
import { invalidArgument } from './errors.js';

/** A map's key: a string (stored as its UTF-8 bytes) or bytes. */
export type MapKey = string | Uint8Array;

/** Keys are encoded by the same code as struct string fields: one UTF-8 encoder in the tree. */
export { utf8Length, writeUtf8 };

const SEED = 0x9747b28c;
/** Keys up to this many bytes are kept as words by `KeyHasher` for the probe's compare (longer: compared by code unit). */
const MAX_WORD_KEY_BYTES = 64;
/**
 * Hashes string keys and remembers the UTF-8 length of the last one, so one pass gives both what the probe needs
 * (the hash) and what an insert needs (the byte length). One instance per map or reader: it holds scratch state.
 */
export class KeyHasher {
  /** UTF-8 byte length of the key passed to the last `hashString` call. */
  byteLength = 0;
  /**
   * After `hashString` of an ASCII key of at most 64 bytes: its bytes as little-endian int32 words (the last one
   * partial, high bytes zero), so a probe compares the key four bytes per word load without re-reading the string.
   */
  readonly words = new Int32Array(MAX_WORD_KEY_BYTES >>> 2);
  /** True when `words` holds the last key (ASCII, at most 64 bytes). */
  wordsValid = false;
  private scratch = new Uint8Array(256);

  /**
   * Hash of the UTF-8 encoding of `s`; sets `byteLength`. Throws INVALID_ARGUMENT if `s` is not well-formed UTF-16
   * (checked only for keys with a code unit above 0x7f: an ASCII string cannot hold a surrogate).
   */
  hashString(s: string): number {
    const len = s.length;
    const words = this.words;
    const keep = len <= MAX_WORD_KEY_BYTES;
    let h = SEED;
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      const c0 = s.charCodeAt(i);
      const c1 = s.charCodeAt(i + 1);
      const c2 = s.charCodeAt(i + 2);
      const c3 = s.charCodeAt(i + 3);
      if ((c0 | c1 | c2 | c3) >= 0x80) return this.hashEncoded(s);
      const k = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24);
      if (keep) words[i >>> 2] = k;
      h = murmurRound(h, k);
    }
    let k = 0;
    for (let shift = 0; i < len; i++, shift += 8) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return this.hashEncoded(s);
      k |= c << shift;
    }
    if (keep && (len & 3) !== 0) words[len >>> 2] = k;
    this.wordsValid = keep;
    this.byteLength = len;
    return murmurFinish(h, k, len);
  }

  /** Non-ASCII keys: encode into the scratch buffer, hash the bytes. */
  private hashEncoded(s: string): number {
    this.wordsValid = false;
    if (!s.isWellFormed()) throw illFormedKey(s);
    const n = utf8Length(s);
    if (n > this.scratch.length) this.scratch = new Uint8Array(Math.max(n, this.scratch.length * 2));
    writeUtf8(s, this.scratch, 0);
    this.byteLength = n;
    return hashBytes(this.scratch, 0, n);
  }
}

/** The error for a string key with a lone surrogate; the message shows the key with its surrogates escaped. */
export function illFormedKey(s: string): Error {
  return invalidArgument(`key ${JSON.stringify(s)} is not well-formed UTF-16 (a lone surrogate): it has no UTF-8 form`);
}

/**
 * True if the `len` bytes of `b` at `off` are valid UTF-8 (no surrogates, no overlong forms), so that decoding them
 * gives back a string that encodes to the very same bytes. ASCII keys are checked here; others by `isUtf8`.
 */
export function isUtf8Key(b: Uint8Array, off: number, len: number): boolean {
  const end = off + len;
  for (let i = off; i < end; i++) if (b[i]! >= 0x80) return isUtf8(b.subarray(off, end));
  return true;
}

/** Hash of `len` bytes of `b` from `off`; equal to `hashString` of a string whose UTF-8 encoding they are. */
export function hashBytes(b: Uint8Array, off: number, len: number): number {
  return murmur3(b, off, len, SEED);
}

/**
 * True if the `len` bytes of `src` at `off` are the UTF-8 encoding of `s` from code unit `from` on. The caller has
 * already checked the lengths agree, so the loop only compares; ASCII compares one code unit to one byte.
 */
export function utf8Equals(s: string, src: Uint8Array, off: number, len: number, from = 0): boolean {
  const n = s.length;
  const end = off + len;
  for (let i = from; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      if (src[off++] !== c) return false;
      continue;
    }
    if (c < 0x800) {
      if (src[off++] !== (0xc0 | (c >> 6)) || src[off++] !== (0x80 | (c & 0x3f))) return false;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        if (
          src[off++] !== (0xf0 | (c >> 18)) ||
          src[off++] !== (0x80 | ((c >> 12) & 0x3f)) ||
          src[off++] !== (0x80 | ((c >> 6) & 0x3f)) ||
          src[off++] !== (0x80 | (c & 0x3f))
        )
          return false;
        continue;
      }
      c = 0xfffd;
    }
    if (
      src[off++] !== (0xe0 | (c >> 12)) ||
      src[off++] !== (0x80 | ((c >> 6) & 0x3f)) ||
      src[off++] !== (0x80 | (c & 0x3f))
    )
      return false;
  }
  return off === end;
}

/**
 * `utf8Equals` for a key stored 4-byte aligned (arena keys start at a record offset + 8): compares an ASCII
 * string four code units against one u32 word; goes on with `utf8Equals` from the first non-ASCII code unit.
 * `u32` views the same memory as `src`; the caller checked `len` is the key's UTF-8 length.
 */
export function utf8EqualsAligned(s: string, src: Uint8Array, u32: Uint32Array, off: number, len: number): boolean {
  const n = s.length;
  let i = 0;
  let w = off >>> 2;
  for (; i + 4 <= n && i + 4 <= len; i += 4, w++) {
    const c0 = s.charCodeAt(i);
    const c1 = s.charCodeAt(i + 1);
    const c2 = s.charCodeAt(i + 2);
    const c3 = s.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) >= 0x80) break;
    if (u32[w] !== (c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)) >>> 0) return false;
  }
  // The first i code units were ASCII, so they took exactly i bytes.
  return utf8Equals(s, src, off + i, len - i, i);
}

/**
 * True if the `len` key bytes starting at int32 word `w` of `src` equal `words` (from `KeyHasher`). The word after
 * the key may hold other bytes (the value): only the key's bytes of the last word are compared. Reads at most
 * `ceil(len / 4)` words, which stay inside the record's 8-byte-aligned block.
 */
export function wordsEqual(words: Int32Array, src: Int32Array, w: number, len: number): boolean {
  const full = len >>> 2;
  for (let j = 0; j < full; j++) if (src[w + j] !== words[j]) return false;
  const rem = len & 3;
  return rem === 0 || (src[w + full]! & ((1 << (rem << 3)) - 1)) === words[full];
}

/** True if `len` bytes of `a` at `aOff` equal `len` bytes of `b` at `bOff`. */
export function bytesEqual(a: Uint8Array, aOff: number, b: Uint8Array, bOff: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[aOff + i] !== b[bOff + i]) return false;
  return true;
}
