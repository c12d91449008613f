import type { Engine } from '@heapless/engine';
import type { EngineArgs } from './engine-args.js';
import type { CommandIo } from './engine-command.js';

const PROGRESS_EVERY = 100_000;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `bytes` as text when they are UTF-8 without control characters, else undefined. */
function asText(bytes: Uint8Array): string | undefined {
  let s: string;
  try {
    s = utf8.decode(bytes);
  } catch {
    return undefined;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
  return /[\u0000-\u001f\u007f]/.test(s) ? undefined : s;
}

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');

/**
 * Writes the live entries of `engine` in key order, within `args.start`/`args.end`, at most `args.limit`: as
 * `key => value` lines (bytes that are not text as 0x hex), or with `--json` one object per line,
 * `{"key": text}` or `{"keyHex": hex}` and the same for the value.
 */
export async function dumpEntries(
  engine: Engine,
  args: EngineArgs,
  io: CommandIo,
  progress: (line: string) => void,
): Promise<void> {
  let n = 0;
  const limit = args.limit ?? Number.POSITIVE_INFINITY;
  if (limit === 0) return;
  for await (const [k, v] of engine.iterator({ gte: args.start, lt: args.end })) {
    const key = asText(k);
    const value = asText(v);
    if (args.json) {
      const o: Record<string, string> = {};
      if (key === undefined) o.keyHex = hex(k);
      else o.key = key;
      if (value === undefined) o.valueHex = hex(v);
      else o.value = value;
      io.out(`${JSON.stringify(o)}\n`);
    } else io.out(`${key ?? `0x${hex(k)}`} => ${value ?? `0x${hex(v)}`}\n`);
    if (++n % PROGRESS_EVERY === 0) progress(`dumped ${n} entries`);
    if (n >= limit) break;
  }
  progress(`dumped ${n} entries`);
}
