import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { ActorError } from '../errors.js';
import type { ServerTimeouts, TlsOptions } from './publish-options.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * How often Node looks for connections past their headers or request timeout: a twentieth of the headers timeout, at
 * most 1 s (and at least 10 ms, so that a tiny timeout does not make the check run all the time; a check walks only
 * the connections in the middle of a request). Node finds a late connection at the first check after its timeout, so
 * it is closed at most one interval late (10 s: by 11 s; 4 s: by 4.2 s) plus however long the event loop was busy,
 * which the rest of the 1.25 times the timeout promised leaves room for.
 */
function connectionsCheckingInterval(headersTimeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(headersTimeoutMs / 20)));
}

/**
 * fastify's `serverFactory`: the Node HTTP server (HTTPS with `tls`, which WebSocket upgrades then share as WSS) with
 * the connection cap and timeouts of `t`. Node closes a connection whose headers (an upgrade's too) or whole request
 * take too long with 408, and a kept-alive one idle between requests, checking every
 * {@link connectionsCheckingInterval}. With TLS, Node starts the HTTP clock only once the TLS handshake is done, so
 * the handshake gets the headers timeout of its own: a peer that never finishes it is closed then (no 408: there is
 * no TLS to send it over), not after Node's default of 120 s.
 */
export function nodeServerFactory(t: ServerTimeouts, tls: TlsOptions | null): (handler: Handler) => Server {
  return (handler) => {
    const options: ServerOptions = {
      headersTimeout: t.headersTimeoutMs,
      requestTimeout: t.requestTimeoutMs,
      keepAliveTimeout: t.keepAliveTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(t.headersTimeoutMs),
    };
    let server: Server;
    if (tls === null) server = createServer(options, handler);
    else {
      try {
        server = createTlsServer(
          { ...options, handshakeTimeout: t.headersTimeoutMs, cert: tls.cert, key: tls.key },
          handler,
        );
      } catch (cause) {
        throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `tls: ${(cause as Error).message}`, { cause });
      }
    }
    server.maxConnections = t.maxConnections;
    return server;
  };
}
