/**
 * What a session needs of its connection's socket, whatever the transport (a WebSocket, or length-prefixed records
 * over TCP): frames out, reading paused and resumed, a heartbeat, and the two ways to end it. The transport feeds the
 * session with `Session.frame`, `Session.heard` and `Session.socketClosed` (session.ts).
 */
export interface SessionSocket {
  /** Whether frames may still be sent (no close sent or received). */
  readonly open: boolean;
  /** Sends one frame; `done` runs once it was handed to the kernel, or dropped as the socket closed. */
  send(frame: Uint8Array, done?: () => void): void;
  /**
   * Sends one frame made of two parts, `head` then `body`, without copying them together (a stream's items are
   * shared by every watcher); nothing else goes between them. `done` as for {@link send}.
   */
  sendParts(head: Uint8Array, body: Uint8Array, done: () => void): void;
  /** Stops reading the peer's bytes (the kernel's buffer then fills and TCP stops the peer). */
  pause(): void;
  resume(): void;
  /** Asks the peer for a sign of life; its answer comes as `Session.heard`. */
  ping(): void;
  /** Sends a close of `code` and `reason` (an error code string) and ends the connection once the peer answers. */
  close(code: number, reason: string): void;
  /** Destroys the connection at once, sending nothing. */
  terminate(): void;
}
