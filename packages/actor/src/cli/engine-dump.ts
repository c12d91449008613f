/**
 * `heapless engine dump`: the live entries of an engine directory in key order. In a map's directory (one an
 * OffHeapMap persisted, a heapless server's among them: see `readMapMeta` of @heapless/offheap for how it is told),
 * the engine's keys carry the map's namespace byte; the dump shows the map's records under the keys the user wrote
 * (bounds are such keys too), and its metadata apart (`--meta`); `--raw` shows the engine's keys as they are.
 */
import type { Engine } from '@heapless/engine';
import { ActorError } from '../errors.js';
import type { CommandIo } from './command-io.js';
import type { EngineArgs } from './engine-args.js';

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

/** One line of the dump: fields as text when they are, else as hex (`keyHex`, `0x…`). */
type Line = { label?: string; key: Uint8Array; value: Uint8Array; keyAsHex?: boolean };

function writeLine(io: CommandIo, json: boolean, { label, key, value, keyAsHex }: Line): void {
  const k = keyAsHex ? undefined : asText(key);
  const v = asText(value);
  if (json) {
    const o: Record<string, string> = {};
    if (label !== undefined) o.meta = label;
    if (k === undefined) o.keyHex = hex(key);
    else o.key = k;
    if (v === undefined) o.valueHex = hex(value);
    else o.value = v;
    io.out(`${JSON.stringify(o)}\n`);
  } else io.out(`${label === undefined ? '' : `${label} `}${k ?? `0x${hex(key)}`} => ${v ?? `0x${hex(value)}`}\n`);
}

/**
 * Writes the live entries of `engine` in key order, within `args.start`/`args.end`, at most `args.limit`: as
 * `key => value` lines (bytes that are not text as 0x hex), or with `--json` one object per line, `{"key": text}`
 * or `{"keyHex": hex}` and the same for the value. A map's directory: its records (a bytes-keyed map's keys in hex),
 * or with `args.meta` its metadata, each line labelled `meta` (the user's named values) or `map` (the map's own;
 * JSON: `"meta": label`). Throws ActorError USAGE for `--meta` on a directory that is not a map's.
 */
export async function dumpEntries(
  engine: Engine,
  args: EngineArgs,
  io: CommandIo,
  progress: (line: string) => void,
): Promise<void> {
  const offheap = args.raw ? undefined : await import('@heapless/offheap');
  const map = offheap?.readMapMeta(engine);
  if (args.meta && map === undefined) {
    throw new ActorError(
      'HEAPLESS_ERR_ACTOR_USAGE',
      `--meta needs a map's directory: ${args.dir} holds no map's metadata`,
    );
  }
  let n = 0;
  const limit = args.limit ?? Number.POSITIVE_INFINITY;
  const each = (line: Line): boolean => {
    writeLine(io, args.json, line);
    if (++n % PROGRESS_EVERY === 0) progress(`dumped ${n} entries`);
    return n < limit;
  };
  if (limit > 0) {
    if (offheap === undefined || map === undefined) {
      for await (const [key, value] of engine.iterator({ gte: args.start, lt: args.end })) {
        if (!each({ key, value })) break;
      }
    } else if (args.meta) {
      for await (const [k, value] of engine.iterator({ lt: offheap.MAP_RECORD_RANGE.gte })) {
        if (!each({ label: 'map', key: k.subarray(1), value })) break;
      }
      for await (const [k, value] of engine.iterator({ gte: offheap.MAP_RECORD_RANGE.lt })) {
        const what = offheap.mapEngineKey(k);
        if (!each({ label: what?.kind === 'user-meta' ? 'meta' : 'engine', key: what?.name ?? k, value })) break;
      }
    } else {
      const { gte, lt } = offheap.MAP_RECORD_RANGE;
      const bounds = {
        gte: args.start === undefined ? gte : offheap.mapRecordKey(args.start),
        lt: args.end === undefined ? lt : offheap.mapRecordKey(args.end),
      };
      const keyAsHex = map.keys === 'bytes';
      for await (const [k, stored] of engine.iterator(bounds)) {
        if (!each({ key: k.subarray(1), value: offheap.mapRecordValue(stored).value, keyAsHex })) break;
      }
    }
  }
  progress(`dumped ${n} entries`);
}
