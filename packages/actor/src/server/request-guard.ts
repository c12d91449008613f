import { isIP } from 'node:net';
import type { ErrorCode } from '@heapless/client/protocol';

/**
 * Which requests a server trusts (DESIGN.md: "A server answers only requests whose Host and Origin it trusts").
 *
 * - **Host**: an IP address, `localhost` or a name under `.localhost`, or one of `allowedHosts`. Anything else is a
 *   name an attacker's DNS may point at this machine (DNS rebinding: a page of evil.example whose name now resolves
 *   to 127.0.0.1 is same-origin with the server as far as the browser knows), answered `421 HOST_NOT_ALLOWED`.
 * - **Origin**: a request without one comes from a program, not a page, and is let through. One with an `Origin`
 *   comes from a page; only the listed `allowedOrigins` (exact `scheme://host[:port]`, or `*` for any) are served,
 *   with CORS headers so that the page may read the answer; any other gets `403 ORIGIN_NOT_ALLOWED`.
 */
/** What {@link RequestGuard.check} answers: trusted, or refused with the code the reply (or close) carries. */
export type GuardVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: Extract<ErrorCode, 'HOST_NOT_ALLOWED' | 'ORIGIN_NOT_ALLOWED'> };

const TRUSTED: GuardVerdict = Object.freeze({ ok: true });
const HOST_REFUSED: GuardVerdict = Object.freeze({ ok: false, reason: 'HOST_NOT_ALLOWED' });
const ORIGIN_REFUSED: GuardVerdict = Object.freeze({ ok: false, reason: 'ORIGIN_NOT_ALLOWED' });

export class RequestGuard {
  readonly #hosts: ReadonlySet<string>;
  readonly #origins: ReadonlySet<string>;
  readonly #anyOrigin: boolean;

  constructor(allowedHosts: readonly string[], allowedOrigins: readonly string[]) {
    this.#hosts = new Set(allowedHosts.map((h) => h.toLowerCase()));
    this.#origins = new Set(allowedOrigins);
    this.#anyOrigin = this.#origins.has('*');
  }

  /** Whether a request with these headers is trusted, and if not, the code it is refused with (no allocation). */
  check(host: string | undefined, origin: string | undefined): GuardVerdict {
    if (!this.hostAllowed(host)) return HOST_REFUSED;
    if (origin !== undefined && !this.originAllowed(origin)) return ORIGIN_REFUSED;
    return TRUSTED;
  }

  /** Whether the `Host` header names this server rather than a name that may have been rebound to it. */
  hostAllowed(host: string | undefined): boolean {
    if (host === undefined) return false;
    const name = hostName(host);
    if (name === null) return false;
    return isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost') || this.#hosts.has(name);
  }

  /** Whether a page of `origin` may use the server. */
  originAllowed(origin: string): boolean {
    return this.#anyOrigin || this.#origins.has(origin);
  }
}

/** The lowercased name of a `Host` header (`name[:port]`, `[v6]:port`), without the port; null if malformed. */
function hostName(host: string): string | null {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? null : h.slice(1, end);
  }
  const colon = h.indexOf(':');
  const name = colon < 0 ? h : h.slice(0, colon);
  return name === '' ? null : name;
}

/**
 * The response headers besides the CORS-safelisted ones that an allowed page may read: `accept`, which a 415 sets to
 * the content types the route takes.
 */
export const CORS_EXPOSED_HEADERS = 'accept';

/** What a preflight answers for an allowed origin: the methods and headers the routes use, for 10 minutes. */
export const CORS_PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE',
  'access-control-allow-headers': 'authorization, content-type, accept',
  'access-control-max-age': '600',
} as const;
