/**
 * Whether a string is well-formed UTF-16: every surrogate is half of a pair. Only such a string has a UTF-8 form of
 * its own (an encoder writes U+FFFD for a lone surrogate, the bytes of another string), so only such a string can
 * be a key.
 */

/** The check in one pass over the code units, for runtimes without `String.prototype.isWellFormed`. */
export function isWellFormedByScan(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false; // a low surrogate with no high one before it
    const d = s.charCodeAt(i + 1); // NaN past the end
    if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
    i++;
  }
  return true;
}

const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** `String.prototype.isWellFormed` where the runtime has it (Node 20, browsers since 2023), else the scan. */
export const isWellFormed: (s: string) => boolean =
  nativeIsWellFormed === undefined ? isWellFormedByScan : (s) => nativeIsWellFormed.call(s);
