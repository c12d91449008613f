/**
 * @heapless/client for Node: `connect` over `ws` (token in an `Authorization` header) or raw TCP (`tcp://`,
 * `tls://`), `httpClient` over `fetch`; both take a `ca` to trust a server's self-signed certificate (`wss://`, `https://`).
 */
import WebSocket from 'ws';
import { DEFAULT_MAX_FRAME_BYTES, PROTOCOL } from './protocol/limits.js';
import type { CertificateAuthority } from './transport/certificate-authority.js';
import { connectWith } from './transport/connect-with.js';
import { type HttpClientOptions, httpClient as httpClientWith } from './transport/http-client.js';
import { nodeCa } from './transport/node-ca.js';
import { fetchTrusting } from './transport/node-fetch.js';
import { isTcpUrl, openTcpSocket } from './transport/node-tcp-socket.js';
import type { Remote } from './transport/remote-types.js';
import type { ConnectOptions } from './transport/rpc-client.js';
import type { SocketLike } from './transport/socket-like.js';

export * from './shared-exports.js';
export type { CertificateAuthority } from './transport/certificate-authority.js';

/** Options of the Node `connect`: those of every platform, and a CA to trust. */
export interface NodeConnectOptions extends ConnectOptions {
  /** Certificate authority (PEM) a `wss://` server's certificate may be signed by, e.g. its self-signed one. */
  ca?: CertificateAuthority;
}

/** Options of the Node `httpClient`: those of every platform, and a CA to trust. */
export interface NodeHttpClientOptions extends HttpClientOptions {
  /** Certificate authority (PEM) an `https://` server's certificate may be signed by; not with `fetch`. */
  ca?: CertificateAuthority;
}

function openNodeSocket(url: string, token: string | undefined, ca: CertificateAuthority | undefined): SocketLike {
  const socket = new WebSocket(url, [PROTOCOL], {
    ...(ca === undefined ? {} : { ca: nodeCa(ca) }),
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    // Replies are never larger than the frames a server accepts; a bigger one is a broken server.
    maxPayload: DEFAULT_MAX_FRAME_BYTES * 4,
    perMessageDeflate: false,
  });
  return socket as unknown as SocketLike;
}

/**
 * Connects to a heapless server at `url` (`ws://host:port/v1/ws`, or `wss://` with TLS; `tcp://host:port`, or
 * `tls://` with TLS, for a server's raw TCP port) and resolves with a ref whose
 * methods are `T`'s exposed methods returning promises (`T` is `typeof MyActor` or an interface). Rejects with
 * `CONNECT_FAILED` (a certificate not trusted included), `UNAUTHORIZED`, `HOST_NOT_ALLOWED` or `ORIGIN_NOT_ALLOWED`
 * when the first connection fails. The caller must `close()` the ref.
 */
export function connect<T>(url: string, opts: NodeConnectOptions = {}): Promise<Remote<T>> {
  const ca = opts.ca;
  const open = isTcpUrl(url) ? openTcpSocket : openNodeSocket;
  return connectWith<T>((u, token) => open(u, token, ca), url, opts);
}

/**
 * A typed ref over HTTP (`http://` or `https://`), as on every platform; with `ca`, requests go through `node:https`
 * trusting it (Node's `fetch` takes no CA). A certificate not trusted rejects the call with `CONNECTION_LOST`.
 */
export function httpClient<T>(baseUrl: string, opts: NodeHttpClientOptions = {}): Remote<T> {
  if (opts.ca === undefined) return httpClientWith<T>(baseUrl, opts);
  if (opts.fetch !== undefined) throw new TypeError('httpClient: give ca or fetch, not both');
  return httpClientWith<T>(baseUrl, { ...opts, fetch: fetchTrusting(opts.ca) });
}
