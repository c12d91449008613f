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
 * `bytes` (a copy the engine handed over, owned by the caller) in `format`: the same memory as a Buffer or as
 * itself, or decoded from UTF-8.
 */
export function fromEngine(bytes: Uint8Array, format: Format): FormatData {
  if (format === 'view') return bytes;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return format === 'buffer' ? buffer : buffer.toString('utf8');
}
