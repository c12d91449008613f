import { parseArgs } from 'node:util';
import { ActorError } from '../errors.js';

/** The subcommands of `heapless engine` (LevelDB's `ldb` and RocksDB's `sst_dump`, for one engine directory). */
export type EngineSubcommand = 'stats' | 'dump' | 'verify' | 'compact' | 'repair' | 'checkpoint';

const SUBCOMMANDS: readonly EngineSubcommand[] = ['stats', 'dump', 'verify', 'compact', 'repair', 'checkpoint'];

/** `heapless engine SUB DIR [TARGET] [options]` as parsed. */
export interface EngineArgs {
  command: 'engine';
  sub: EngineSubcommand;
  /** The engine directory. */
  dir: string;
  /** `checkpoint`'s target directory. */
  target: string | undefined;
  /** One JSON document (NDJSON for `dump`) on stdout instead of text for people. */
  json: boolean;
  /** Progress lines on stderr (default: when stderr is a terminal). */
  progress: boolean;
  /**
   * `dump`: keys >= start and < end (the bytes given: UTF-8 of the text, or with `--hex` the hex decoded; a map's
   * keys as the user wrote them), at most `limit` entries.
   */
  start: Uint8Array | undefined;
  end: Uint8Array | undefined;
  limit: number | undefined;
  /** `dump`: a map's metadata (its user's named values, the map's own keys) instead of its records. */
  meta: boolean;
  /** `dump`: the engine's keys as they are, also in a map's directory (the map's namespace byte shown). */
  raw: boolean;
  /** `repair`: make an empty database of a directory that holds none of the engine's files (else refused). */
  create: boolean;
}

export const ENGINE_USAGE = `Usage: heapless engine <command> DIR [options]

Commands (DIR is an engine directory; stats, dump and verify read one a running server holds open, the others
refuse it with LOCKED):
  stats DIR              figures per level, amplifications, caches, bloom filter, each table's properties
  dump DIR               every live entry in key order (key => value; non-text bytes as 0x hex); in a map's
                         directory (one a heapless server or OffHeapMap persisted), the map's records under the
                         keys the user wrote, and with --meta its metadata instead
  verify DIR             check every checksum of every file; names each bad file and offset
  compact DIR            compact the whole key range down the levels
  repair DIR             rebuild the manifest from the tables and logs present (damaged files, and copies of
                         what it replaces, go to DIR/lost/); refuses a directory holding none of the engine's
                         files (CURRENT, MANIFEST-*, *.log, *.sst) unless given --create
  checkpoint DIR TARGET  write a consistent, openable copy of DIR into TARGET (new or empty, not inside DIR)

Options:
  --json                 print JSON (dump: one JSON object per line) instead of text
  --progress             progress on stderr (default when stderr is a terminal)
  --start KEY            dump: from KEY (included; in a map's directory, a key of the map)
  --end KEY              dump: up to KEY (excluded)
  --hex                  dump: --start and --end are hex (6869 for "hi"), for keys that are not text
  --limit N              dump: at most N entries
  --meta                 dump: a map's metadata (named values, the map's own keys) instead of its records
  --raw                  dump: the engine's keys as they are, even in a map's directory
  --create               repair: make an empty database where there is none

Exit status: 0 on success, 1 with "heapless: CODE: message" on stderr on failure (verify: when a file is damaged),
2 for a bad command line.
`;

/** Parses the arguments after `engine`. Throws ActorError HEAPLESS_ERR_USAGE naming what is wrong. */
export function parseEngineArgs(argv: readonly string[], stderrIsTty: boolean): EngineArgs {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(argv);
  } catch (e) {
    throw new ActorError('HEAPLESS_ERR_USAGE', (e as Error).message, { cause: e });
  }
  const { values, positionals } = parsed;
  const [sub, dir, target, ...rest] = positionals;
  if (sub === undefined) throw new ActorError('HEAPLESS_ERR_USAGE', 'heapless engine needs a command');
  if (!SUBCOMMANDS.includes(sub as EngineSubcommand)) {
    throw new ActorError('HEAPLESS_ERR_USAGE', `unknown engine command ${sub} (one of ${SUBCOMMANDS.join(', ')})`);
  }
  if (dir === undefined) throw new ActorError('HEAPLESS_ERR_USAGE', `heapless engine ${sub} needs a directory`);
  if (sub === 'checkpoint' && target === undefined) {
    throw new ActorError('HEAPLESS_ERR_USAGE', 'heapless engine checkpoint needs a target directory');
  }
  const extra = sub === 'checkpoint' ? rest[0] : (target ?? rest[0]);
  if (extra !== undefined) throw new ActorError('HEAPLESS_ERR_USAGE', `unexpected argument ${extra}`);
  if (sub !== 'repair' && values.create !== undefined) {
    throw new ActorError('HEAPLESS_ERR_USAGE', '--create is an option of repair');
  }
  if (sub !== 'dump') {
    for (const name of ['start', 'end', 'limit', 'hex', 'meta', 'raw'] as const) {
      if (values[name] !== undefined) throw new ActorError('HEAPLESS_ERR_USAGE', `--${name} is an option of dump`);
    }
  }
  if (values.meta && (values.start !== undefined || values.end !== undefined || values.raw)) {
    throw new ActorError('HEAPLESS_ERR_USAGE', "--meta lists all of a map's metadata: no --start, --end or --raw");
  }
  const hex = values.hex ?? false;
  let limit: number | undefined;
  if (values.limit !== undefined) {
    if (!/^\d+$/.test(values.limit) || !Number.isSafeInteger(Number(values.limit))) {
      throw new ActorError('HEAPLESS_ERR_USAGE', `--limit must be an integer >= 0, got ${values.limit}`);
    }
    limit = Number(values.limit);
  }
  return {
    command: 'engine',
    sub: sub as EngineSubcommand,
    dir,
    target: sub === 'checkpoint' ? target : undefined,
    json: values.json ?? false,
    progress: values.progress ?? stderrIsTty,
    start: keyBound('start', values.start, hex),
    end: keyBound('end', values.end, hex),
    limit,
    meta: values.meta ?? false,
    raw: values.raw ?? false,
    create: values.create ?? false,
  };
}

/** The bytes of `--start`/`--end`: the text's UTF-8, or with `--hex` the hex decoded. Throws USAGE for bad hex. */
function keyBound(name: string, value: string | undefined, hex: boolean): Uint8Array | undefined {
  if (value === undefined) return undefined;
  if (!hex) return Buffer.from(value, 'utf8');
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) {
    throw new ActorError('HEAPLESS_ERR_USAGE', `--${name} with --hex: an even number of hex digits, got ${value}`);
  }
  return Buffer.from(value, 'hex');
}

function parseOptions(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      progress: { type: 'boolean' },
      start: { type: 'string' },
      end: { type: 'string' },
      limit: { type: 'string' },
      hex: { type: 'boolean' },
      meta: { type: 'boolean' },
      raw: { type: 'boolean' },
      create: { type: 'boolean' },
    },
  });
}
