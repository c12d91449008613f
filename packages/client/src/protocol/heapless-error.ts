import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/**
 * The error every heapless client and server call rejects with. `code` is stable and is what programs should
 * compare; `wire` is its stable number (FORMAT.md); `closeCode` is set when a WebSocket close caused it.
 */
export class HeaplessError extends Error {
  override readonly name = 'HeaplessError';
  /** The stable string code, e.g. `'MAILBOX_FULL'`. */
  readonly code: ErrorCode;
  /** The stable numeric code carried in reply frames. */
  readonly wire: number;
  /** The WebSocket close code that caused this error, when there was one. */
  readonly closeCode: number | undefined;

  /** `message` defaults to the table's description of `code`. */
  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown; closeCode?: number }) {
    super(message ?? ERROR_CODES[code].message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.wire = ERROR_CODES[code].wire;
    this.closeCode = options?.closeCode;
  }
}
