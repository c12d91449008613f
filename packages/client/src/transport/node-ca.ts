import type { CertificateAuthority } from './certificate-authority.js';

/**
 * `ca` as `node:tls` types it: each byte array viewed as a Buffer over the same memory (no copy). Apart from the
 * declarations of the public entries, which name only `Uint8Array`.
 */
export function nodeCa(ca: CertificateAuthority): string | Buffer | (string | Buffer)[] {
  const one = (c: string | Uint8Array): string | Buffer =>
    typeof c === 'string' || Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  return Array.isArray(ca) ? ca.map(one) : one(ca);
}
