/**
 * @heapless/client for browsers (and any runtime with a global `WebSocket`): `connect` over the global `WebSocket`,
 * `httpClient` over `fetch`. Imports nothing Node-specific.
 */

import { PROTOCOL } from './protocol/limits.js';
import { tokenProtocol } from './protocol/token.js';
import { connectWith } from './transport/connect-with.js';
import type { Remote } from './transport/remote-types.js';
import type { ConnectOptions } from './transport/rpc-client.js';
import type { SocketLike } from './transport/socket-like.js';

export * from './shared-exports.js';

type WebSocketCtor = new (url: string, protocols: string[]) => SocketLike;

function openBrowserSocket(url: string, token: string | undefined): SocketLike {
  const WS = (globalThis as { WebSocket?: WebSocketCtor }).WebSocket;
  if (WS === undefined) throw new Error('no global WebSocket: use the Node entry (@heapless/client/node)');
  // Browsers cannot set headers on a WebSocket, so the token travels as a second subprotocol.
  const socket = new WS(url, token === undefined ? [PROTOCOL] : [PROTOCOL, tokenProtocol(token)]);
  socket.binaryType = 'arraybuffer';
  return socket;
}

/**
 * Connects to a heapless server at `url` (`ws://host:port/v1/ws`) and resolves with a ref whose methods are `T`'s
 * exposed methods returning promises (`T` is `typeof MyActor` or an interface). Rejects with `CONNECT_FAILED` or
 * `UNAUTHORIZED` when the first connection fails. The caller must `close()` the ref.
 */
export function connect<T>(url: string, opts?: ConnectOptions): Promise<Remote<T>> {
  return connectWith<T>(openBrowserSocket, url, opts);
}
