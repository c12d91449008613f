/**
 * Every error the engine throws carries a stable `code` from this table. Callers branch on `code`, never on the
 * message. `CorruptionError` is its own class so that "the data on disk is bad" can never be mistaken for a bug or
 * for bad input.
 */
export const ErrorCodes = {
  /** A checksum, magic number, length or structure on disk does not hold. Names the file and byte offset. */
  CORRUPTION: 'HEAPLESS_ERR_CORRUPTION',
  /** Another `Engine.open` (in this or another process) holds the directory's LOCK file. */
  LOCKED: 'HEAPLESS_ERR_LOCKED',
  /** The engine was closed, or is closing, when the call was made. */
  CLOSED: 'HEAPLESS_ERR_CLOSED',
  /** An argument has the wrong type or is out of range (key too large, bad option, released snapshot...). */
  INVALID_ARGUMENT: 'HEAPLESS_ERR_INVALID_ARGUMENT',
  /** The directory holds no database and `createIfMissing` is false, or holds one and `errorIfExists` is true. */
  NOT_FOUND: 'HEAPLESS_ERR_NOT_FOUND',
  /** An operating-system I/O call failed (disk full, permission...). The cause is attached. */
  IO: 'HEAPLESS_ERR_IO',

  // Issue 14 (compression codecs).
  /**
   * What was asked needs something this runtime lacks: writing zstd before Node 22.15 (no `zlib.zstdCompressSync`), or
   * a codec whose native binding does not load on this platform. Names the codec and what is missing.
   */
  UNSUPPORTED: 'HEAPLESS_ERR_UNSUPPORTED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Base class of every engine error. */
export class EngineError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
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

export function invalidArgument(message: string): EngineError {
  return new EngineError(ErrorCodes.INVALID_ARGUMENT, message);
}
