/**
 * WebSocket close codes a heapless server uses (RFC 6455 section 7.4 plus one private code). The close reason is the
 * heapless error code string (for example `'BAD_FRAME'`), so a client can turn a close into a typed error.
 */
export const CLOSE_CODES = {
  /** Normal close by either side. */
  NORMAL: 1000,
  /** The server is shutting down. */
  GOING_AWAY: 1001,
  /** The client did not offer the `heapless.v1` subprotocol (reason `UNSUPPORTED_PROTOCOL`). */
  PROTOCOL_ERROR: 1002,
  /** A text frame: the protocol is binary only. */
  UNSUPPORTED_DATA: 1003,
  /** A frame that is not msgpack or not an array of well-formed messages. */
  INVALID_PAYLOAD: 1007,
  /** A frame that breaks a limit other than size (too many calls). */
  POLICY: 1008,
  /** A frame larger than maxFrameBytes. */
  TOO_BIG: 1009,
  /** The server failed in a way that is not the peer's fault. */
  INTERNAL: 1011,
  /** Missing or wrong token; 4000-4999 are private codes, 4401 echoes HTTP 401. */
  UNAUTHORIZED: 4401,
  /** A `Host` or `Origin` the server does not trust; the reason says which (4403 echoes HTTP 403). */
  FORBIDDEN: 4403,
} as const;
