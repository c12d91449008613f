import { type FlagGroup, groupsUsage, parseFlags, usageError } from './flags.js';

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

/** The options of `heapless engine` (`--help` is answered before they are read). */
const ENGINE_OPTIONS = {
  title: 'Options:',
  column: 23,
  flags: {
    json: { type: 'boolean', help: ['print JSON (dump: one JSON object per line) instead of text'] },
    progress: { type: 'boolean', help: ['progress on stderr (default when stderr is a terminal)'] },
    start: {
      type: 'string',
      arg: 'KEY',
      help: ["dump: from KEY (included; in a map's directory, a key of the map)"],
    },
    end: { type: 'string', arg: 'KEY', help: ['dump: up to KEY (excluded)'] },
    hex: { type: 'boolean', help: ['dump: --start and --end are hex (6869 for "hi"), for keys that are not text'] },
    limit: { type: 'integer', min: 0, arg: 'N', help: ['dump: at most N entries'] },
    meta: {
      type: 'boolean',
      help: ["dump: a map's metadata (named values, the map's own keys) instead of its records"],
    },
    raw: { type: 'boolean', help: ["dump: the engine's keys as they are, even in a map's directory"] },
    create: { type: 'boolean', help: ['repair: make an empty database where there is none'] },
  },
} as const satisfies FlagGroup;

/** The options only `dump` takes. */
const DUMP_ONLY = ['start', 'end', 'limit', 'hex', 'meta', 'raw'] as const;

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

${groupsUsage([ENGINE_OPTIONS])}
Exit status: 0 on success, 1 with "heapless: CODE: message" on stderr on failure (verify: when a file is damaged),
2 for a bad command line.
`;

/** Parses the arguments after `engine`. Throws ActorError HEAPLESS_ERR_ACTOR_USAGE naming what is wrong. */
export function parseEngineArgs(argv: readonly string[], stderrIsTty: boolean): EngineArgs {
  const parsed = parseFlags(ENGINE_OPTIONS.flags, argv);
  const { positionals, given } = parsed;
  const [sub, dir, target, ...rest] = positionals;
  if (sub === undefined) throw usageError('heapless engine needs a command');
  if (!SUBCOMMANDS.includes(sub as EngineSubcommand)) {
    throw usageError(`unknown engine command ${sub} (one of ${SUBCOMMANDS.join(', ')})`);
  }
  if (dir === undefined) throw usageError(`heapless engine ${sub} needs a directory`);
  if (sub === 'checkpoint' && target === undefined) {
    throw usageError('heapless engine checkpoint needs a target directory');
  }
  const extra = sub === 'checkpoint' ? rest[0] : (target ?? rest[0]);
  if (extra !== undefined) throw usageError(`unexpected argument ${extra}`);
  if (sub !== 'repair' && given.has('create')) throw usageError('--create is an option of repair');
  if (sub !== 'dump') {
    for (const name of DUMP_ONLY) if (given.has(name)) throw usageError(`--${name} is an option of dump`);
  }
  const values = parsed.values();
  if (values.meta && (values.start !== undefined || values.end !== undefined || values.raw)) {
    throw usageError("--meta lists all of a map's metadata: no --start, --end or --raw");
  }
  return {
    command: 'engine',
    sub: sub as EngineSubcommand,
    dir,
    target: sub === 'checkpoint' ? target : undefined,
    json: values.json,
    progress: given.has('progress') || stderrIsTty,
    start: keyBound('start', values.start, values.hex),
    end: keyBound('end', values.end, values.hex),
    limit: values.limit,
    meta: values.meta,
    raw: values.raw,
    create: values.create,
  };
}

/** The bytes of `--start`/`--end`: the text's UTF-8, or with `--hex` the hex decoded. Throws USAGE for bad hex. */
function keyBound(name: string, value: string | undefined, hex: boolean): Uint8Array | undefined {
  if (value === undefined) return undefined;
  if (!hex) return Buffer.from(value, 'utf8');
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) {
    throw usageError(`--${name} with --hex: an even number of hex digits, got ${value}`);
  }
  return Buffer.from(value, 'hex');
}
