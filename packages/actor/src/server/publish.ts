import type { Duplex } from 'node:stream';
import { CLOSE_CODES, type ErrorCode, HeaplessError, PROTOCOL } from '@heapless/client/protocol';
import Fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import { handleOf } from '../runtime/actor-handle.js';
import { isPushStream } from '../runtime/push-stream.js';
import { bearerToken, digest, tokenMatches, upgradeToken } from './auth.js';
import {
  bodyIsJson,
  bytesFromBase64,
  HttpReplier,
  JSON_TYPE,
  MSGPACK,
  offersProtocol,
  routerErrorCode,
  takesBodies,
  unpackBody,
  upgradeRefusal,
} from './http-reply.js';
import { nodeServerFactory } from './node-server.js';
import { type PublishOptions, resolvePublishOptions } from './publish-options.js';
import { CORS_EXPOSED_HEADERS, CORS_PREFLIGHT_HEADERS, RequestGuard } from './request-guard.js';
import type { Session } from './session.js';
import { listenTcp, type TcpListener } from './tcp-server.js';
import { wireCodeOf, wireMessageOf } from './wire-error.js';
import { WsSession } from './ws-session.js';

export type { PublishOptions } from './publish-options.js';

/** A running server; its owner must `close()` it. */
export interface Published {
  /** The WebSocket URL, e.g. `ws://127.0.0.1:7070/v1/ws` (`wss://` with TLS). */
  url: string;
  /** The HTTP base URL, e.g. `http://127.0.0.1:7070` (`https://` with TLS). */
  httpUrl: string;
  port: number;
  /** With the `tcp` option: the raw TCP URL, e.g. `tcp://127.0.0.1:7071` (`tls://` with TLS). */
  tcpUrl?: string;
  /** With the `tcp` option: the port of raw TCP. */
  tcpPort?: number;
  /** The server's logger (fastify's pino logger; silent unless `logger` was given). */
  log: FastifyBaseLogger;
  /**
   * Stops accepting connections and requests, lets calls in flight finish and their replies go out, closes every
   * WebSocket with 1001 and the HTTP server. Does not stop the actor (its owner does). Idempotent.
   */
  close(): Promise<void>;
}

/** A host as a URL names it: an IPv6 address in brackets. */
function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function refusalMessage(code: ErrorCode, host: string | undefined, origin: string | undefined): string {
  return code === 'HOST_NOT_ALLOWED'
    ? `host ${host ?? '(none)'} is not one this server answers to`
    : `origin ${origin} is not allowed`;
}

/**
 * Answers an upgrade the server will not complete and lets go of its socket once the answer is written. After the
 * `upgrade` event the socket is no longer Node's HTTP server's: nothing listens for its errors (a peer that resets it
 * would make the write's ECONNRESET an uncaught error, which ends the process), Node's header and request timeouts no
 * longer apply, and the server's sockets stay open for reading after `end()` until the peer closes its side, so a
 * peer that never did would hold the socket, and a place under `maxConnections`, for ever.
 */
function refuseUpgrade(socket: Duplex, response: string): void {
  socket.on('error', () => socket.destroy());
  socket.once('finish', () => socket.destroy());
  socket.end(response);
}

/** What fastify's own errors mean in the wire table. */
function codeOfFastifyError(e: { code?: unknown; statusCode?: unknown }): ErrorCode | undefined {
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return 'BODY_TOO_LARGE';
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return 'UNSUPPORTED_MEDIA_TYPE';
  if (typeof e.code === 'string' && e.code.startsWith('FST_')) {
    return typeof e.statusCode === 'number' && e.statusCode < 500 ? 'BAD_FRAME' : 'INTERNAL';
  }
  if (e instanceof SyntaxError) return 'BAD_FRAME'; // JSON.parse of a bad body
  return undefined;
}

/**
 * Serves the actor behind `ref` (from `spawn` or `spawnInWorker`) on one port (FORMAT.md of @heapless/client):
 * WebSocket on `path`, `POST /v1/call/:method` (JSON or msgpack), `GET /healthz`, and `GET /metrics` when given
 * metrics; with `tcp`, the same sessions over raw TCP (or TLS) on a port of their own. Only the actor's exposed methods are callable. Resolves once listening.
 *
 * Throws `ActorError` `HEAPLESS_ERR_ACTOR_INSECURE_BIND` for a non-loopback host without a token, or without TLS and not
 * `insecure`, and `HEAPLESS_ERR_ACTOR_INVALID_OPTION` for a bad limit or certificate; rejects with the listen error (e.g. EADDRINUSE).
 */
export async function publish(ref: object, opts: PublishOptions = {}): Promise<Published> {
  const handle = handleOf(ref);
  const o = resolvePublishOptions(opts, handle.exposed);
  const { host, path, hello, limits } = o;
  const expected = opts.token ? digest(opts.token) : null;
  const guard = new RequestGuard(o.allowedHosts, o.allowedOrigins);
  const metrics = opts.metrics;
  const replier = new HttpReplier();
  const decoder = replier.decoder;

  const app = Fastify({
    serverFactory: nodeServerFactory(o.server, o.tls),
    logger: opts.logger ?? false,
    bodyLimit: o.maxBodyBytes,
    // A JSON key __proto__ (a batch's metadata name) is an own property, as JSON.parse and the msgpack decoder make
    // it; fastify's default refuses the body as 'not valid JSON'. Nothing here merges a body into another object.
    onProtoPoisoning: 'ignore',
    // A route parameter may be a KV key: room for a percent-encoded key well past the KV actor's 1 KiB limit, so
    // that a long key gets the actor's KEY_TOO_LARGE rather than the router's 414.
    routerOptions: { maxParamLength: 8192 },
    // One log line per call would cost more than the call; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    // Errors of the router (a bad percent-escape, a segment past maxParamLength) in the body every error has.
    frameworkErrors: (err, req, reply) => replier.error(req, reply, routerErrorCode(err), err.message),
  });
  const log = app.log;

  const sendValue = (req: FastifyRequest, reply: FastifyReply, status: number, value: unknown) =>
    replier.value(req, reply, status, value);
  const sendError = (req: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string) =>
    replier.error(req, reply, code, message);

  app.removeContentTypeParser('text/plain'); // a body is an args array: JSON or msgpack only
  app.addContentTypeParser(MSGPACK, { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, unpackBody(decoder, body as Buffer));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.setNotFoundHandler((req, reply) => sendError(req, reply, 'UNKNOWN_ROUTE', `no route ${req.method} ${req.url}`));
  app.setErrorHandler((err, req, reply) => {
    const code = codeOfFastifyError(err as { code?: unknown; statusCode?: unknown }) ?? wireCodeOf(err);
    if (code === 'INTERNAL') log.error({ err }, 'request failed');
    return sendError(req, reply, code, wireMessageOf(err));
  });
  app.addHook('onRequest', (req, reply, done) => {
    const origin = req.headers.origin;
    const verdict = guard.check(req.headers.host, origin);
    if (!verdict.ok) {
      log.info({ host: req.headers.host, origin, remote: req.socket.remoteAddress }, `refused: ${verdict.reason}`);
      void sendError(req, reply, verdict.reason, refusalMessage(verdict.reason, req.headers.host, origin));
      return;
    }
    if (origin !== undefined) {
      // An allowed page: it may read what it is answered, errors included.
      reply
        .header('access-control-allow-origin', origin)
        .header('access-control-expose-headers', CORS_EXPOSED_HEADERS)
        .header('vary', 'Origin');
      if (req.method === 'OPTIONS') {
        void reply.code(204).headers(CORS_PREFLIGHT_HEADERS).send();
        return;
      }
    }
    if (expected === null || req.url === '/healthz' || tokenMatches(expected, bearerToken(req.headers.authorization))) {
      done();
      return;
    }
    void sendError(req, reply, 'UNAUTHORIZED', 'missing or wrong token');
  });

  app.get('/healthz', async () => ({ ok: true, ...opts.health?.() }));
  app.post('/v1/call/:method', { preParsing: takesBodies([JSON_TYPE, MSGPACK]) }, async (req, reply) => {
    const { method } = req.params as { method: string };
    const body = req.body;
    if (!Array.isArray(body)) throw new HeaplessError('BAD_REQUEST', 'the body must be the array of arguments');
    const args = bodyIsJson(req) ? bytesFromBase64(body) : body;
    if (!handle.exposed.has(method)) throw new HeaplessError('UNKNOWN_METHOD', `unknown method ${method}`);
    const result = await handle.call(method, args);
    if (isPushStream(result)) {
      result.cancel();
      throw new HeaplessError('BAD_REQUEST', `${method} opens a stream: call it over the WebSocket (or its SSE route)`);
    }
    return sendValue(req, reply, 200, result);
  });
  if (opts.routes !== undefined) await app.register(async (scope) => opts.routes!(scope, handle, replier));
  if (metrics !== undefined) {
    app.get('/metrics', async (_req, reply) => reply.type('text/plain; version=0.0.4').send(metrics.render()));
  }

  // WebSocket: ws on fastify's HTTP server, upgrade handled here so that auth, path and limits stay in one place.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: hello.maxFrameBytes,
    perMessageDeflate: false,
    clientTracking: false,
    handleProtocols: (protocols) => (protocols.has(PROTOCOL) ? PROTOCOL : false),
  });
  const sockets = new Set<WebSocket>();
  const sessions = new Set<Session>();
  if (metrics !== undefined) {
    metrics.connectionLoad = () => {
      const sum = { requestBytes: 0, replyBytes: 0, paused: 0 };
      for (const s of sessions) {
        const l = s.load;
        sum.requestBytes += l.requestBytes;
        sum.replyBytes += l.replyBytes;
        if (l.paused) sum.paused++;
      }
      return sum;
    };
  }
  let closing = false;

  app.server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (closing || url.pathname !== path) {
      const status = closing ? '503 Service Unavailable' : '404 Not Found';
      refuseUpgrade(socket, `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const offered = req.headers['sec-websocket-protocol'];
    if (offered !== undefined && !offersProtocol(offered, PROTOCOL)) {
      // Other subprotocols only: no handshake can succeed (a client fails one that selects none of its own).
      refuseUpgrade(
        socket,
        upgradeRefusal('400 Bad Request', 'UNSUPPORTED_PROTOCOL', `the ${PROTOCOL} subprotocol is required`),
      );
      return;
    }
    const verdict = guard.check(req.headers.host, req.headers.origin);
    const authorized =
      expected === null ||
      tokenMatches(
        expected,
        upgradeToken(req.headers.authorization, req.headers['sec-websocket-protocol'], url, o.allowTokenInQuery),
      );
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.once('close', () => sockets.delete(ws));
      if (!verdict.ok) {
        // Like a wrong token: completed, then closed with 4403 and the code, which a page can see. No hello is sent.
        log.info({ host: req.headers.host, origin: req.headers.origin }, `websocket refused: ${verdict.reason}`);
        ws.on('error', () => {});
        ws.close(CLOSE_CODES.FORBIDDEN, verdict.reason);
        return;
      }
      if (ws.protocol !== PROTOCOL) {
        // No subprotocol offered: completed, then closed, so that a browser sees why (it sees no HTTP status).
        ws.on('error', () => {});
        ws.close(CLOSE_CODES.PROTOCOL_ERROR, 'UNSUPPORTED_PROTOCOL');
        return;
      }
      if (!authorized) {
        // Completed, then closed with 4401: a browser sees no HTTP status, but it does see the close code.
        log.info({ remote: req.socket.remoteAddress }, 'websocket refused: missing or wrong token');
        ws.on('error', () => {});
        ws.close(CLOSE_CODES.UNAUTHORIZED, 'UNAUTHORIZED');
        return;
      }
      opened(new WsSession(ws, handle, hello, limits, log));
    });
  });
  const opened = (session: Session): void => {
    sessions.add(session);
    if (metrics !== undefined) {
      metrics.connections++;
      metrics.connectionsTotal++;
    }
    void session.closed.then(() => {
      sessions.delete(session);
      if (metrics !== undefined) metrics.connections--;
    });
  };

  let tcp: TcpListener | null = null;
  try {
    await app.listen({ host, port: o.port });
    if (o.tcp !== null) {
      tcp = await listenTcp({
        ...o.tcp,
        tls: o.tls,
        maxConnections: o.server.maxConnections,
        handshakeTimeoutMs: o.server.headersTimeoutMs,
        expected,
        hello,
        limits,
        handle,
        log,
        opened,
      });
    }
  } catch (e) {
    wss.close();
    await app.close();
    throw e;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : o.port;
  const hostInUrl = bracketed(host);
  let closed: Promise<void> | null = null;
  const heartbeat = setInterval(() => {
    for (const s of sessions) s.heartbeat();
  }, o.heartbeatMs);

  return {
    url: `${o.tls === null ? 'ws' : 'wss'}://${hostInUrl}:${port}${path}`,
    httpUrl: `${o.tls === null ? 'http' : 'https'}://${hostInUrl}:${port}`,
    port,
    ...(tcp === null || o.tcp === null
      ? {}
      : { tcpUrl: `${o.tls === null ? 'tcp' : 'tls'}://${bracketed(o.tcp.host)}:${tcp.port}`, tcpPort: tcp.port }),
    log,
    close() {
      if (closed !== null) return closed;
      closing = true;
      tcp?.stopAccepting();
      closed = (async () => {
        // The heartbeat goes on meanwhile: a peer that reads nothing more is closed by it, not waited for.
        await Promise.all([...sessions].map((s) => s.shutdown()));
        clearInterval(heartbeat);
        for (const ws of sockets) ws.terminate(); // unauthorized ones still closing
        wss.close();
        await Promise.all([app.close(), tcp?.close()]);
      })();
      return closed;
    },
  };
}
