import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CertificateAuthority } from './certificate-authority.js';
import { nodeCa } from './node-ca.js';

export type { CertificateAuthority } from './certificate-authority.js';

/**
 * The part of `fetch` that `httpClient` uses (method, headers, a byte body, a signal), over `node:http`/`node:https`
 * so that a server's certificate may be checked against `ca` (Node's global fetch takes no CA). An aborted request
 * rejects with the signal's reason, as fetch does.
 */
export function fetchTrusting(ca: CertificateAuthority): typeof fetch {
  return ((input: string | URL, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      const signal = init.signal ?? undefined;
      const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = request(
        url,
        { method: init.method ?? 'GET', headers: init.headers as Record<string, string>, ca: nodeCa(ca), signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers)) {
              if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
            }
            const status = res.statusCode ?? 502;
            const empty = status === 204 || status === 205 || status === 304;
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }));
          });
        },
      );
      req.on('error', (e) => reject(signal?.aborted ? signal.reason : e));
      req.end(init.body as Uint8Array | undefined);
    })) as typeof fetch;
}
