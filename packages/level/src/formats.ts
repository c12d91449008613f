/**
 * The three formats the adapter's private API speaks (its manifest declares `buffer`, `view` and `utf8`), and the
 * conversion of the engine's bytes into each. abstract-level's transcoder encodes every user encoding (json, custom
 * ones) into one of these before a call reaches the adapter and decodes from it after, so the adapter converts only
 * here. The engine accepts strings (as UTF-8) and Uint8Arrays (Buffers included) as they come, so keys and values
 * going in need no conversion at all.
 */

/** A format of the private API: what `keyEncoding` / `valueEncoding` name when a call reaches the adapter. */
export type Format = 'buffer' | 'view' | 'utf8';

/** Data in one of the formats, as the private API passes and returns it. */
export type FormatData = Buffer | Uint8Array | string;

/** The manifest's `encodings`: the formats the adapter handles natively. */
export const NATIVE_FORMATS = { buffer: true, view: true, utf8: true } as const;

/**
 * Non-streaming, so it keeps nothing between calls and one serves everyone. `ignoreBOM` keeps a leading U+FEFF,
 * which is data here; bad UTF-8 becomes U+FFFD, as `Buffer#toString` does. Measured at about a quarter of the cost
 * of wrapping each copy in a Buffer to call `toString` on it.
 */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * `bytes` (a copy the engine handed over, owned by the caller) in `format`: itself, the same memory as a Buffer,
 * or decoded from UTF-8.
 */
export function fromEngine(bytes: Uint8Array, format: Format): FormatData {
  if (format === 'view') return bytes;
  if (format === 'utf8') return utf8.decode(bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
