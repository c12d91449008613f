/**
 * @heapless/client for Node: `connect` over `ws` (token in an `Authorization` header), `httpClient` over `fetch`.
 */
import WebSocket from 'ws';
import { connectWith } from './connect-with.js';
import { DEFAULT_MAX_FRAME_BYTES, PROTOCOL } from './limits.js';
import type { Remote } from './remote-types.js';
import type { ConnectOptions } from './rpc-client.js';
import type { SocketLike } from './socket-like.js';

export * from './shared-exports.js';

function openNodeSocket(url: string, token: string | undefined): SocketLike {
  const socket = new WebSocket(url, [PROTOCOL], {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    // Replies are never larger than the frames a server accepts; a bigger one is a broken server.
    maxPayload: DEFAULT_MAX_FRAME_BYTES * 4,
    perMessageDeflate: false,
  });
  return socket as unknown as SocketLike;
}

/**
 * Connects to a heapless server at `url` (`ws://host:port/v1/ws`) and resolves with a ref whose methods are `T`'s
 * exposed methods returning promises (`T` is `typeof MyActor` or an interface). Rejects with `CONNECT_FAILED` or
 * `UNAUTHORIZED` when the first connection fails. The caller must `close()` the ref.
 */
export function connect<T>(url: string, opts?: ConnectOptions): Promise<Remote<T>> {
  return connectWith<T>(openNodeSocket, url, opts);
}
