import { isIP } from 'node:net';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CALLS_PER_FRAME,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_IN_FLIGHT,
  type ServerHello,
} from '@heapless/client/protocol';
import { MAX_TIMER_MS } from '@heapless/engine';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { ActorError } from '../errors.js';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { isLoopback } from './auth.js';
import type { HttpReplier } from './http-reply.js';
import type { Metrics } from './metrics.js';
import type { SessionLimits } from './session.js';

/**
 * 4 MiB of requests per connection: four of the KV actor's largest values in flight, so that a writer of big values
 * still shares group commits; 1,000 connections at this bound hold 4 GiB at worst, and pipelined reads hold almost
 * nothing here (a `get` is a few dozen bytes).
 */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/**
 * 1 MiB of unwritten replies per connection: room for one of the KV actor's largest values; the kernel's socket
 * buffer (megabytes on a fast link) keeps the link busy beyond it. 1,000 clients that never read hold under 2 GiB.
 */
export const DEFAULT_MAX_REPLY_BYTES = 1024 * 1024;
/**
 * 4096 connections: four times the 1,000 clients the per-connection bounds are sized for, and within the file
 * descriptor limit a server is usually given; a flood of sockets beyond it is closed as it arrives.
 */
export const DEFAULT_MAX_CONNECTIONS = 4096;
/** 10 s for a request's headers (an upgrade's included): a slow but honest client sends them in one packet. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** 30 s for a whole HTTP request, body included (a 1 MiB body at 35 KB/s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** 5 s of silence on a kept-alive HTTP connection between requests (Node's own default). */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** A ping every 30 s; a WebSocket peer that answered none of the last interval is closed (30 to 60 s dead). */
export const DEFAULT_HEARTBEAT_MS = 30_000;

/** Options of {@link publish}. */
export interface PublishOptions {
  /** Default `127.0.0.1`. Any other than loopback requires `token`, and `tls` unless `insecure`. */
  host?: string;
  /**
   * Serve HTTPS and WSS on the port with this certificate chain and private key (PEM). Without it the server
   * speaks clear text, which it refuses off loopback unless `insecure`.
   */
  tls?: TlsOptions;
  /** Listen off loopback without `tls`: the token and every value cross the network readable. Default false. */
  insecure?: boolean;
  /** Default 0 (any free port; see the result's `port`). */
  port?: number;
  /**
   * Also serve the same sessions over raw TCP (length-prefixed frames, FORMAT.md "TCP"; with `tls`, over TLS) on this
   * port (0: any free one) and host (default `host`, under the same rule: off loopback it needs `token`, and `tls`
   * unless `insecure`). Default none.
   */
  tcp?: { port?: number; host?: string };
  /** Required from every caller except `GET /healthz`, compared in constant time. */
  token?: string;
  /**
   * The exposed methods whose call opens a stream (they answer a `PushStream`: the KV actor's `watch`, its class's
   * static `streams`); the hello lists them, and a client ref gives an async iterator for them. Default none.
   */
  streams?: readonly string[];
  /** The WebSocket path; default `/v1/ws`. */
  path?: string;
  /** Largest WebSocket frame accepted (close 1009 beyond) and sent; default 16 MiB. */
  maxFrameBytes?: number;
  /** Most calls in one frame (close 1008 beyond); default 4096. */
  maxCallsPerFrame?: number;
  /** Largest HTTP body (413 beyond); default 1 MiB. */
  maxBodyBytes?: number;
  /** Calls in flight per connection before the server stops reading it; default 4096. */
  maxInFlight?: number;
  /**
   * Bytes of call frames a connection may have read and not yet had answered in full before the server stops reading
   * it; default 4 MiB. A single larger frame is still read.
   */
  maxRequestBytes?: number;
  /**
   * Bytes of replies a connection may have waiting to be written (the peer reads slower than the actor answers, or
   * not at all) before the server stops running its calls and reading it; default 1 MiB. A single larger reply is
   * still sent.
   */
  maxReplyBytes?: number;
  /** Open connections (HTTP and WebSocket); one beyond is closed as it arrives. Default 4096. */
  maxConnections?: number;
  /**
   * Time a connection has to send a request's headers (an upgrade's too); default 10 s, then 408 and closed (within
   * 1.25 times it). With `tls`, also the time it has to finish the TLS handshake (then closed without 408). Over TCP,
   * the time a connection has to send its preface (then close 1008 `TIMEOUT`), and with `tls` again for the handshake.
   */
  headersTimeoutMs?: number;
  /** Time a connection has to send a whole HTTP request; default 30 s, at least `headersTimeoutMs`. */
  requestTimeoutMs?: number;
  /** Idle time allowed on a kept-alive HTTP connection between requests; default 5 s. */
  keepAliveTimeoutMs?: number;
  /**
   * Interval of WebSocket pings; a peer that showed no sign of life (a pong, a frame, a reply it read) over a whole
   * interval is closed. Default 30 s.
   */
  heartbeatMs?: number;
  /**
   * Host names, besides IP addresses and `localhost`, that requests may name in `Host` (the names clients use to
   * reach the server); a request naming another gets `421 HOST_NOT_ALLOWED`. A `host` to listen on that is a name is
   * added.
   */
  allowedHosts?: readonly string[];
  /**
   * Origins of the web pages that may use the server (`https://app.example`, exact; `*` for any): their WebSocket
   * upgrades and HTTP requests are served, with CORS. A request with any other `Origin` gets `403
   * ORIGIN_NOT_ALLOWED` (WebSocket: close 4403). Requests without an `Origin` (programs) are not concerned.
   * Default none.
   */
  allowedOrigins?: readonly string[];
  /** Accept the token in a WebSocket URL's `?token=` (it ends up in logs and history); default false. */
  allowTokenInQuery?: boolean;
  /** fastify's logger option (pino): `false` (default) for none, `true` or pino options. */
  logger?: FastifyServerOptions['logger'];
  /** More fields of `GET /healthz`'s answer (a following server's lag and position), read at each request. */
  health?: () => Record<string, unknown>;
  /** Serve these metrics at `GET /metrics` and count connections in them. */
  metrics?: Metrics;
  /**
   * More HTTP routes for this actor (the KV actor's `/v1/kv`), registered in their own fastify scope (so they may
   * have their own body parsers) behind the same token check and error handler.
   */
  routes?: (scope: FastifyInstance, handle: ActorHandle, replier: HttpReplier) => void | Promise<void>;
}

/** A certificate and its key, PEM (what `node:tls` takes as `cert` and `key`). */
export interface TlsOptions {
  cert: string | Buffer;
  key: string | Buffer;
}

/** Timeouts and the connection cap of the Node server under fastify. */
export interface ServerTimeouts {
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** {@link PublishOptions} checked, with every default filled in. */
export interface ResolvedOptions {
  host: string;
  port: number;
  /** Where to serve raw TCP, or null for nowhere. */
  tcp: { host: string; port: number } | null;
  path: string;
  token: string | undefined;
  hello: ServerHello;
  limits: SessionLimits;
  maxBodyBytes: number;
  heartbeatMs: number;
  server: ServerTimeouts;
  allowedHosts: string[];
  allowedOrigins: string[];
  allowTokenInQuery: boolean;
  tls: TlsOptions | null;
}

/**
 * The rule for any address the server listens on: off loopback, a token is required, and TLS unless `insecure`.
 * Throws `ActorError` `HEAPLESS_ERR_ACTOR_INSECURE_BIND`.
 */
function checkBind(host: string, opts: PublishOptions, tls: TlsOptions | null): void {
  if (isLoopback(host)) return;
  if (!opts.token) {
    throw new ActorError('HEAPLESS_ERR_ACTOR_INSECURE_BIND', `refusing to listen on ${host} without a token`);
  }
  if (tls === null && opts.insecure !== true) {
    throw new ActorError(
      'HEAPLESS_ERR_ACTOR_INSECURE_BIND',
      `refusing to listen on ${host} without TLS: the token would cross the network in clear (give tls, or insecure)`,
    );
  }
}

function isPem(v: unknown): boolean {
  return (typeof v === 'string' || Buffer.isBuffer(v)) && v.length > 0;
}

/** Checks that each allowed origin is `*` or a bare origin (`scheme://host[:port]`, what a browser sends). */
function origins(list: readonly string[]): string[] {
  for (const o of list) {
    let bare = false;
    try {
      bare = o === '*' || new URL(o).origin === o;
    } catch {}
    if (!bare) {
      throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `allowed origin ${o} is not scheme://host[:port] or *`);
    }
  }
  return [...list];
}

function positiveInt(name: string, v: number | undefined, dflt: number): number {
  const n = v ?? dflt;
  if (!Number.isInteger(n) || n < 1)
    throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `${name} must be an integer >= 1`);
  return n;
}

/**
 * A timeout option: an integer of ms from 1 to {@link MAX_TIMER_MS}; a longer timer would fire at once (a heartbeat
 * of 2^31 ms would close every WebSocket).
 */
function durationMs(name: string, v: number | undefined, dflt: number): number {
  const n = v ?? dflt;
  if (!Number.isInteger(n) || n < 1 || n > MAX_TIMER_MS)
    throw new ActorError(
      'HEAPLESS_ERR_ACTOR_INVALID_OPTION',
      `${name} must be an integer from 1 to ${MAX_TIMER_MS} ms, got ${n}`,
    );
  return n;
}

/**
 * Checks `opts` and fills in the defaults. Throws `ActorError` `HEAPLESS_ERR_ACTOR_INSECURE_BIND` for a non-loopback host
 * without a token and `HEAPLESS_ERR_ACTOR_INVALID_OPTION` for an option out of range (a timeout beyond
 * {@link MAX_TIMER_MS} included).
 */
export function resolvePublishOptions(opts: PublishOptions, methods: Iterable<string>): ResolvedOptions {
  const host = opts.host ?? '127.0.0.1';
  const tls = opts.tls ?? null;
  if (tls !== null && (!isPem(tls.cert) || !isPem(tls.key))) {
    throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', 'tls needs a cert and a key, each PEM text or bytes');
  }
  checkBind(host, opts, tls);
  let tcp: ResolvedOptions['tcp'] = null;
  if (opts.tcp !== undefined) {
    const port = opts.tcp.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 0xffff) {
      throw new ActorError(
        'HEAPLESS_ERR_ACTOR_INVALID_OPTION',
        `tcp.port must be an integer from 0 to 65535, got ${port}`,
      );
    }
    tcp = { host: opts.tcp.host ?? host, port };
    checkBind(tcp.host, opts, tls);
  }
  const exposed = [...methods];
  const streams = (opts.streams ?? []).filter((m) => exposed.includes(m));
  const hello: ServerHello = {
    v: 1,
    maxFrameBytes: positiveInt('maxFrameBytes', opts.maxFrameBytes, DEFAULT_MAX_FRAME_BYTES),
    maxCallsPerFrame: positiveInt('maxCallsPerFrame', opts.maxCallsPerFrame, DEFAULT_MAX_CALLS_PER_FRAME),
    maxInFlight: positiveInt('maxInFlight', opts.maxInFlight, DEFAULT_MAX_IN_FLIGHT),
    methods: exposed, // a client's ref offers exactly these
    ...(streams.length > 0 ? { streams } : {}),
  };
  const headersTimeoutMs = durationMs('headersTimeoutMs', opts.headersTimeoutMs, DEFAULT_HEADERS_TIMEOUT_MS);
  const requestTimeoutMs = durationMs(
    'requestTimeoutMs',
    opts.requestTimeoutMs,
    Math.max(DEFAULT_REQUEST_TIMEOUT_MS, headersTimeoutMs),
  );
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', 'requestTimeoutMs must be at least headersTimeoutMs');
  }
  return {
    host,
    port: opts.port ?? 0,
    tcp,
    path: opts.path ?? '/v1/ws',
    token: opts.token,
    hello,
    limits: {
      maxInFlight: hello.maxInFlight,
      maxRequestBytes: positiveInt('maxRequestBytes', opts.maxRequestBytes, DEFAULT_MAX_REQUEST_BYTES),
      maxReplyBytes: positiveInt('maxReplyBytes', opts.maxReplyBytes, DEFAULT_MAX_REPLY_BYTES),
    },
    maxBodyBytes: positiveInt('maxBodyBytes', opts.maxBodyBytes, DEFAULT_MAX_BODY_BYTES),
    heartbeatMs: durationMs('heartbeatMs', opts.heartbeatMs, DEFAULT_HEARTBEAT_MS),
    allowedHosts: [...(opts.allowedHosts ?? []), ...(isIP(host) === 0 ? [host] : [])],
    allowedOrigins: origins(opts.allowedOrigins ?? []),
    allowTokenInQuery: opts.allowTokenInQuery ?? false,
    tls,
    server: {
      maxConnections: positiveInt('maxConnections', opts.maxConnections, DEFAULT_MAX_CONNECTIONS),
      headersTimeoutMs,
      requestTimeoutMs,
      keepAliveTimeoutMs: durationMs('keepAliveTimeoutMs', opts.keepAliveTimeoutMs, DEFAULT_KEEP_ALIVE_TIMEOUT_MS),
    },
  };
}
