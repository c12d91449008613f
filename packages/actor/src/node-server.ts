import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ServerTimeouts } from './publish-options.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * fastify's `serverFactory`: the Node HTTP server with the connection cap and timeouts of `t`. Node closes a
 * connection whose headers (an upgrade's too) or whole request take too long with 408, and a kept-alive one idle
 * between requests; it checks them every `connectionsCheckingInterval`, a quarter of the headers timeout (at most 1 s),
 * so a slow connection is closed within about 1.25 times its timeout.
 */
export function nodeServerFactory(t: ServerTimeouts): (handler: Handler) => Server {
  return (handler) => {
    const server = createServer(
      {
        headersTimeout: t.headersTimeoutMs,
        requestTimeout: t.requestTimeoutMs,
        keepAliveTimeout: t.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(t.headersTimeoutMs / 4))),
      },
      handler,
    );
    server.maxConnections = t.maxConnections;
    return server;
  };
}
