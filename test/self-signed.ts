// A self-signed certificate for the TLS tests, made with openssl (installed by scripts/system-deps.mjs).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Its PEM files in a directory of the test's, and their bytes. */
export interface SelfSigned {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

/** Writes `cert.pem` and `key.pem` into `dir`: an EC certificate for 127.0.0.1 and localhost, good for a day. */
export function selfSigned(dir: string): SelfSigned {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
}
