import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { tokenFromProtocols } from '@heapless/client/protocol';

/**
 * Compares a presented token with the expected one in constant time: both are hashed first, so the comparison
 * is over two equal-length digests and takes the same time whatever the presented token's length or content.
 */
export function tokenMatches(expectedDigest: Buffer, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(expectedDigest, digest(presented));
}

/** The SHA-256 digest of a token, computed once when publishing. */
export function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The token of `Authorization: Bearer TOKEN`, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header);
  return m === null ? undefined : m[1].trim();
}

/**
 * The token a WebSocket upgrade presents: the Authorization header, else a `heapless.token.*` subprotocol, else (only
 * when `queryAllowed`: query strings end up in logs and history) the `token` query parameter (FORMAT.md).
 */
export function upgradeToken(
  authorization: string | undefined,
  protocolHeader: string | undefined,
  url: URL,
  queryAllowed: boolean,
): string | undefined {
  return (
    bearerToken(authorization) ??
    tokenFromProtocols((protocolHeader ?? '').split(',').map((p) => p.trim())) ??
    (queryAllowed ? (url.searchParams.get('token') ?? undefined) : undefined)
  );
}

/** Whether `host` names the loopback interface only (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./i.test(h);
  return false;
}
