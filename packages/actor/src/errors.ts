/**
 * The one table of the actor package's own error codes, in the shape every heapless package's table has: keyed by
 * the stable code (`HEAPLESS_ERR_ACTOR_<NAME>`), each with its default message. These are errors raised to whoever
 * sets things up (publishing, spawning, the command); a remote caller never needs them, and should one reach it, the
 * wire table (`WIRE_CODES` in `server/wire-error.ts`) calls it `INTERNAL`. Errors a remote caller sees (MAILBOX_FULL,
 * ACTOR_STOPPED, BAD_ARGUMENTS, ...) are `HeaplessError`s of the wire's codes. A code is never reused for another
 * meaning; the README lists every one (errors.test.ts holds the two to each other).
 */
export const ACTOR_ERRORS = {
  /** `publish` on a host other than loopback without a token, or without TLS unless told `insecure`. */
  HEAPLESS_ERR_ACTOR_INSECURE_BIND: { message: 'refusing to listen on a non-loopback host without a token or TLS' },
  /** An option out of range or of the wrong type; the message names it. */
  HEAPLESS_ERR_ACTOR_INVALID_OPTION: { message: 'invalid option' },
  /** A name listed as exposed that is not a method of the actor, or not one a client ref can call. */
  HEAPLESS_ERR_ACTOR_NOT_A_METHOD: { message: 'exposed name is not a method of the actor' },
  /** The worker of `spawnInWorker` could not load or construct its actor. */
  HEAPLESS_ERR_ACTOR_WORKER_START: { message: 'worker actor failed to start' },
  /** A command-line usage error; the message says which argument (the command exits 2). */
  HEAPLESS_ERR_ACTOR_USAGE: { message: 'bad command line' },
} as const satisfies Record<`HEAPLESS_ERR_ACTOR_${string}`, { message: string }>;

/** A stable code of the actor package's table, e.g. `'HEAPLESS_ERR_ACTOR_USAGE'`. */
export type ActorErrorCode = keyof typeof ACTOR_ERRORS;

type ShortName<C> = C extends `HEAPLESS_ERR_ACTOR_${infer S}` ? S : never;

/** The codes by their short name (`ActorErrorCodes.USAGE === 'HEAPLESS_ERR_ACTOR_USAGE'`), from the table. */
export const ActorErrorCodes = Object.freeze(
  Object.fromEntries(
    (Object.keys(ACTOR_ERRORS) as ActorErrorCode[]).map((c) => [c.slice('HEAPLESS_ERR_ACTOR_'.length), c]),
  ),
) as { readonly [C in ActorErrorCode as ShortName<C>]: C };

/** Whether `code` is one of the table's codes. */
export function isActorErrorCode(code: unknown): code is ActorErrorCode {
  return typeof code === 'string' && Object.hasOwn(ACTOR_ERRORS, code);
}

/** An error of the actor package's own table; `code` is stable and is what programs compare. */
export class ActorError extends Error {
  override readonly name = 'ActorError';
  /** The stable string code, a key of ACTOR_ERRORS. */
  readonly code: ActorErrorCode;

  /** `message` defaults to the table's description of `code`. */
  constructor(code: ActorErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? ACTOR_ERRORS[code].message, options);
    this.code = code;
  }
}
