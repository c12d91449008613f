/**
 * Keys are bytes. A string key is its UTF-8 encoding, computed here one code unit at a time so that hashing,
 * comparing and copying a string key never allocates (no TextEncoder round trip, no temporary Uint8Array).
 * A lone surrogate encodes as U+FFFD (EF BF BD), exactly as TextEncoder does, so the bytes are the ones any
 * other UTF-8 encoder would produce for a well-formed string.
 *
 * The hash is FNV-1a over the UTF-8 bytes followed by murmur3's 32-bit finalizer: FNV alone clusters badly under
 * linear probing for keys that differ only in their last bytes ("user:1", "user:2"), the finalizer spreads them.
 * The same bytes always give the same hash whether they come from a string or a Uint8Array, which is what lets a
 * map rebuilt from the engine's byte keys answer lookups by string.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** murmur3 fmix32: full avalanche of the 32 bits. Returns an int32 (a small integer for V8, never a heap number). */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Hashes string keys and remembers the UTF-8 length of the last one, so one pass gives both what the probe needs
 * (the hash) and what an insert needs (the byte length). One instance per map or reader: it holds the scratch state.
 */
export class KeyHasher {
  /** UTF-8 byte length of the key passed to the last `hashString` call. */
  byteLength = 0;

  /** Hash of the UTF-8 encoding of `s`; sets `byteLength`. */
  hashString(s: string): number {
    let h = FNV_OFFSET;
    let n = 0;
    const len = s.length;
    for (let i = 0; i < len; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        h = Math.imul(h ^ c, FNV_PRIME);
        n += 1;
        continue;
      }
      if (c < 0x800) {
        h = Math.imul(h ^ (0xc0 | (c >> 6)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
        n += 2;
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < len ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
          h = Math.imul(h ^ (0xf0 | (c >> 18)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | ((c >> 12) & 0x3f)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
          n += 4;
          continue;
        }
        c = 0xfffd;
      }
      h = Math.imul(h ^ (0xe0 | (c >> 12)), FNV_PRIME);
      h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
      h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
      n += 3;
    }
    this.byteLength = n;
    return fmix32(h);
  }
}

/** Hash of `len` bytes of `b` from `off`; equal to `hashString` of a string whose UTF-8 encoding they are. */
export function hashBytes(b: Uint8Array, off: number, len: number): number {
  let h = FNV_OFFSET;
  const end = off + len;
  for (let i = off; i < end; i++) h = Math.imul(h ^ b[i]!, FNV_PRIME);
  return fmix32(h);
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

/**
 * True if the `len` bytes of `src` at `off` are the UTF-8 encoding of `s`. The caller has already checked that
 * `len` is `s`'s UTF-8 length, so the loop only compares; ASCII compares one code unit to one byte.
 */
export function utf8Equals(s: string, src: Uint8Array, off: number, len: number): boolean {
  const n = s.length;
  const end = off + len;
  for (let i = 0; i < n; i++) {
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

/** True if `len` bytes of `a` at `aOff` equal `len` bytes of `b` at `bOff`. */
export function bytesEqual(a: Uint8Array, aOff: number, b: Uint8Array, bOff: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[aOff + i] !== b[bOff + i]) return false;
  return true;
}
