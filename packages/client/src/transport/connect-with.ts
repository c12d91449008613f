import { remoteRef } from './remote-ref.js';
import type { Remote } from './remote-types.js';
import { type ConnectOptions, RpcClient } from './rpc-client.js';
import type { OpenSocket } from './socket-like.js';

/**
 * Connects with the given socket opener and resolves with a typed ref once the server's hello has arrived. Rejects
 * with `CONNECT_FAILED` or `UNAUTHORIZED` when the first connection fails (no reconnect is tried for it).
 */
export async function connectWith<T>(openSocket: OpenSocket, url: string, opts?: ConnectOptions): Promise<Remote<T>> {
  const client = new RpcClient(url, openSocket, opts);
  await client.ready;
  return remoteRef<Remote<T>>(client);
}
