/**
 * Protocol names and default limits, shared by the client and the server so both sides agree without a handshake.
 * The server announces the limits it actually uses in its hello (FORMAT.md); the client sizes its frames by them.
 */

/** The WebSocket subprotocol a heapless server selects. Bumped only for an incompatible frame format. */
export const PROTOCOL = 'heapless.v1';

/**
 * Prefix of the subprotocol that carries a token from a browser, which cannot set an Authorization header on a
 * WebSocket: `heapless.token.<base64url(utf8 token)>`. The server never echoes it.
 */
export const TOKEN_PROTOCOL_PREFIX = 'heapless.token.';

/** 16 MiB: room for a frame of many 1 MiB values (the KV actor's default value limit) without letting one peer pin much memory. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** Calls in one frame; 4096 keeps the decode of one frame (and so one event-loop turn) short. */
export const DEFAULT_MAX_CALLS_PER_FRAME = 4096;

/** Calls a connection may have in flight before the server stops reading it; above the benchmark's depth of 1000. */
export const DEFAULT_MAX_IN_FLIGHT = 4096;

/** 1 MiB: an HTTP call body (the args array). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** The id of the server's hello message; calls use ids 1..2^32-1. */
export const HELLO_ID = 0;

/** Largest call id before the client wraps around to 1 (ids are msgpack uint32). */
export const MAX_CALL_ID = 0xffff_ffff;

/** Operations (sets, deletes and metadata names together) in one KV `batch` or `setMany`. */
export const DEFAULT_MAX_BATCH_OPS = 10_000;
