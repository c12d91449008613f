/** The part of the WHATWG `WebSocket` the client uses. Browsers' `WebSocket` and `ws`'s `WebSocket` both have it. */
export interface SocketLike {
  binaryType: string;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

/** Opens a socket to `url` presenting `token`; how (header or subprotocol) depends on the platform. */
export type OpenSocket = (url: string, token: string | undefined) => SocketLike;
