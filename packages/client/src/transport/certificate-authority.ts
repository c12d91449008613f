/**
 * A certificate authority (PEM) to trust besides the system's: what `node:tls` takes as `ca`. Bytes are typed as
 * `Uint8Array` (a `Buffer` is one) so that the declarations a client app reads need no Node types.
 */
export type CertificateAuthority = string | Uint8Array | (string | Uint8Array)[];
