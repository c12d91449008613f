import { HeaplessError } from '@heapless/client/protocol';

/**
 * The query of `url`, each name and value decoded strictly (`+` is a space): an escape that is not valid UTF-8
 * (`%FF`, a lone surrogate's `%ED%A0%80`, a stray `%`) is refused with BAD_URL, where fastify's parser keeps it
 * as text and a lenient decoder would replace it (either way `?prefix=%FF` would name another prefix). A name given
 * twice is BAD_ARGUMENTS.
 */
export function strictQuery(url: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const at = url.indexOf('?');
  if (at < 0) return out;
  for (const part of url.slice(at + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decodeQueryPart(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : decodeQueryPart(part.slice(eq + 1));
    if (Object.hasOwn(out, name)) throw new HeaplessError('BAD_ARGUMENTS', `query parameter ${name} given twice`);
    out[name] = value;
  }
  return out;
}

function decodeQueryPart(s: string): string {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '));
  } catch {
    throw new HeaplessError('BAD_URL', `query ${JSON.stringify(s)} is not valid percent-encoded UTF-8`);
  }
}
