/**
 * The one table of the engine's error codes. Every error the engine throws is an `EngineError` whose `code` is a key
 * of this table; callers branch on `code`, never on the message, and the code strings are public: never reuse one for
 * another meaning. They follow the rule of every heapless package, `HEAPLESS_ERR_<PACKAGE>_<NAME>`.
 * `message` is what an error says when its thrower has nothing more precise; throwers name the file, offset, key or
 * option at fault. `CorruptionError` is its own class, so that "the data on disk is bad" can never be mistaken for a
 * bug or for bad input.
 */
export const ENGINE_ERRORS = {
  /**
   * A checksum, magic number, length or structure on disk does not hold, or the manifest does not match the files
   * present. Always a `CorruptionError`, which names the file and byte offset. Nothing wrong was returned and no file
   * was changed on the way.
   */
  HEAPLESS_ERR_ENGINE_CORRUPTION: { message: 'stored data is corrupt' },
  /** Another `Engine.open` (in this or another process) holds the directory's LOCK file. */
  HEAPLESS_ERR_ENGINE_LOCKED: { message: 'the database directory is locked by another open' },
  /** The engine, an iterator, a table or a builder was closed, or is closing, when the call was made. */
  HEAPLESS_ERR_ENGINE_CLOSED: { message: 'closed' },
  /** An argument has the wrong type or is out of range (key too large, bad option, released snapshot...). */
  HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT: { message: 'invalid argument' },
  /** The directory holds no database and `createIfMissing` is false. */
  HEAPLESS_ERR_ENGINE_NOT_FOUND: { message: 'no database where one is required' },
  /**
   * An operating-system I/O call failed (disk full, permission, a removed directory); the cause is attached. After a
   * failed background write the engine refuses writes.
   */
  HEAPLESS_ERR_ENGINE_IO: { message: 'an I/O call failed' },
  /**
   * What was asked needs something this runtime lacks: writing zstd before Node 22.15 (no `zlib.zstdCompressSync`), or
   * a codec whose native binding does not load on this platform. Names the codec and what is missing.
   */
  HEAPLESS_ERR_ENGINE_UNSUPPORTED: { message: 'not supported by this runtime' },
  /**
   * A write, flush, compaction or checkpoint was asked of an engine opened with `readOnly: true`, or of a follower
   * (`openFollower`): neither ever changes the directory. Nothing was written.
   */
  HEAPLESS_ERR_ENGINE_READ_ONLY: { message: 'the database is open read-only' },
  /** The directory already holds a database and `errorIfExists` is true. */
  HEAPLESS_ERR_ENGINE_EXISTS: { message: 'a database already exists where none may be' },
} as const satisfies Record<`HEAPLESS_ERR_ENGINE_${string}`, { message: string }>;

/** A stable engine error code, e.g. `'HEAPLESS_ERR_ENGINE_CORRUPTION'`. */
export type ErrorCode = keyof typeof ENGINE_ERRORS;

type ShortName<C extends ErrorCode> = C extends `HEAPLESS_ERR_ENGINE_${infer S}` ? S : never;

/**
 * The codes by short name (`ErrorCodes.CORRUPTION === 'HEAPLESS_ERR_ENGINE_CORRUPTION'`), for callers that compare `code`.
 * Derived from {@link ENGINE_ERRORS}, so the two cannot disagree.
 */
export const ErrorCodes = Object.freeze(
  Object.fromEntries(Object.keys(ENGINE_ERRORS).map((code) => [code.slice('HEAPLESS_ERR_ENGINE_'.length), code])),
) as { readonly [C in ErrorCode as ShortName<C>]: C };

/** Whether `code` is one of the engine's codes (for errors that crossed a thread as plain data). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ENGINE_ERRORS, code);
}

/** Base class of every engine error. `message` defaults to the table's. */
export class EngineError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? ENGINE_ERRORS[code].message, options);
    this.code = code;
    this.name = 'EngineError';
  }
}

/** Bytes on disk are not what was written. Never carries wrong data back to a caller. */
export class CorruptionError extends EngineError {
  readonly file: string;
  readonly offset: number;
  constructor(file: string, offset: number, what: string) {
    super(ErrorCodes.CORRUPTION, `corruption in ${file} at offset ${offset}: ${what}`);
    this.name = 'CorruptionError';
    this.file = file;
    this.offset = offset;
  }
}

/** HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT with `message`, which names the argument and what is wrong with it. */
export function invalidArgument(message: string): EngineError {
  return new EngineError(ErrorCodes.INVALID_ARGUMENT, message);
}

/** HEAPLESS_ERR_ENGINE_CLOSED: "`what` is `state`" (`engine /data is closed`, `table builder for x.sst is finished`). */
export function closedError(what: string, state = 'closed'): EngineError {
  return new EngineError(ErrorCodes.CLOSED, `${what} is ${state}`);
}

/** HEAPLESS_ERR_ENGINE_IO for a failed system call: "`what` `path` failed: `cause`'s message", with `cause` attached. */
export function ioError(what: string, path: string, cause: unknown): EngineError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new EngineError(ErrorCodes.IO, `${what} ${path} failed: ${reason}`, { cause });
}
