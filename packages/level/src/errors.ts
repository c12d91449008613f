/**
 * Engine errors as the Level ecosystem knows them. abstract-level's callers branch on `code` (`LEVEL_LOCKED`,
 * `LEVEL_CORRUPTION`...), so every error the engine raises through this adapter is re-thrown as a
 * {@link HeaplessLevelError} with the Level code of the table below and the engine's error, untouched, as `cause`
 * (its `code`, and for corruption its `file` and `offset`, stay readable there).
 */
import { EngineError, ErrorCodes, MAX_KEY_SIZE } from '@heapless/engine';

/** The Level codes this adapter raises itself (abstract-level raises the others, such as LEVEL_DATABASE_NOT_OPEN). */
export const LevelErrorCodes = {
  /** The engine found bad bytes on disk (`HEAPLESS_ERR_ENGINE_CORRUPTION`); the cause names the file and offset. */
  CORRUPTION: 'LEVEL_CORRUPTION',
  /** Another open, in this process or another, holds the directory (`HEAPLESS_ERR_ENGINE_LOCKED`). */
  LOCKED: 'LEVEL_LOCKED',
  /** An operating-system call failed (`HEAPLESS_ERR_ENGINE_IO`); after a failed background write, writes are refused. */
  IO_ERROR: 'LEVEL_IO_ERROR',
  /**
   * At open: no database and `createIfMissing: false` (`HEAPLESS_ERR_ENGINE_NOT_FOUND`), or one exists and
   * `errorIfExists: true` (`HEAPLESS_ERR_ENGINE_EXISTS`): abstract-level has one code for both; the message says which.
   */
  NOT_FOUND: 'LEVEL_NOT_FOUND',
  /** The engine was closed under the call (`HEAPLESS_ERR_ENGINE_CLOSED`). */
  DATABASE_NOT_OPEN: 'LEVEL_DATABASE_NOT_OPEN',
  /** An iterator or `clear()` was given an explicit snapshot that is closed (abstract-level checks the other reads). */
  SNAPSHOT_NOT_OPEN: 'LEVEL_SNAPSHOT_NOT_OPEN',
  /** A key longer than the engine's `MAX_KEY_SIZE` (`HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT`). */
  INVALID_KEY: 'LEVEL_INVALID_KEY',
  /** A value longer than the engine's `MAX_VALUE_SIZE` (`HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT`). */
  INVALID_VALUE: 'LEVEL_INVALID_VALUE',
} as const;

export type LevelErrorCode = (typeof LevelErrorCodes)[keyof typeof LevelErrorCodes];

/** An error in Level's terms: `code` is a Level code; `cause`, when the engine raised it, the `EngineError`. */
export class HeaplessLevelError extends Error {
  readonly code: LevelErrorCode;
  constructor(code: LevelErrorCode, message: string, cause?: EngineError) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.name = 'HeaplessLevelError';
  }
}

const BY_ENGINE_CODE: Readonly<Record<string, LevelErrorCode>> = {
  [ErrorCodes.CORRUPTION]: LevelErrorCodes.CORRUPTION,
  [ErrorCodes.LOCKED]: LevelErrorCodes.LOCKED,
  [ErrorCodes.IO]: LevelErrorCodes.IO_ERROR,
  [ErrorCodes.NOT_FOUND]: LevelErrorCodes.NOT_FOUND,
  [ErrorCodes.EXISTS]: LevelErrorCodes.NOT_FOUND,
  [ErrorCodes.CLOSED]: LevelErrorCodes.DATABASE_NOT_OPEN,
};

/**
 * The error to throw for `err`, raised by the engine during any call but a write. An engine INVALID_ARGUMENT here
 * (a bad option, a snapshot of another database) is a programming mistake, which Level reports as a `TypeError`
 * without a code; anything that is not an `EngineError` passes through unchanged.
 */
export function toLevelError(err: unknown): unknown {
  if (!(err instanceof EngineError)) return err;
  const code = BY_ENGINE_CODE[err.code];
  if (code !== undefined) return new HeaplessLevelError(code, err.message, err);
  return new TypeError(err.message, { cause: err });
}

/**
 * As {@link toLevelError}, for a write of `keys`: the engine's INVALID_ARGUMENT on a write means a key or a value
 * is too large (abstract-level has checked the types), and the keys tell which.
 */
export function toLevelWriteError(err: unknown, keys: Iterable<string | Uint8Array>): unknown {
  if (!(err instanceof EngineError) || err.code !== ErrorCodes.INVALID_ARGUMENT) return toLevelError(err);
  for (const key of keys) {
    const length = typeof key === 'string' ? Buffer.byteLength(key) : key.byteLength;
    if (length > MAX_KEY_SIZE) return new HeaplessLevelError(LevelErrorCodes.INVALID_KEY, err.message, err);
  }
  return new HeaplessLevelError(LevelErrorCodes.INVALID_VALUE, err.message, err);
}
