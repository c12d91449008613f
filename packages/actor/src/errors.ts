/**
 * The actor package's own error table: errors raised to whoever sets things up (publishing, spawning, the command),
 * never sent over the wire. Errors a remote caller sees (MAILBOX_FULL, ACTOR_STOPPED, BAD_ARGUMENTS, ...) are
 * `HeaplessError`s from the wire table in @heapless/client/protocol.
 */
export const ACTOR_ERROR_CODES = {
  /** `publish` on a host other than loopback without a token, or without TLS unless told `insecure`. */
  HEAPLESS_ERR_INSECURE_BIND: 'refusing to listen on a non-loopback host without a token or TLS',
  /** An option out of range or of the wrong type; the message names it. */
  HEAPLESS_ERR_INVALID_OPTION: 'invalid option',
  /** A name listed as exposed that is not a method of the actor. */
  HEAPLESS_ERR_NOT_A_METHOD: 'exposed name is not a method of the actor',
  /** The worker of `spawnInWorker` could not load or construct its actor. */
  HEAPLESS_ERR_WORKER_START: 'worker actor failed to start',
  /** A command-line usage error; the message says which argument. */
  HEAPLESS_ERR_USAGE: 'bad command line',
} as const;

/** A stable code of the actor package's table. */
export type ActorErrorCode = keyof typeof ACTOR_ERROR_CODES;

/** An error of the actor package's own table; `code` is stable. */
export class ActorError extends Error {
  override readonly name = 'ActorError';
  readonly code: ActorErrorCode;

  /** `message` defaults to the table's description of `code`. */
  constructor(code: ActorErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? ACTOR_ERROR_CODES[code], options);
    this.code = code;
  }
}
