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
  /** `dump`: keys >= start and < end, at most `limit` entries. */
  start: string | undefined;
  end: string | undefined;
  limit: number | undefined;
  /** `repair`: make an empty database of a directory that holds none of the engine's files (else refused). */
  create: boolean;
}

export const ENGINE_USAGE = `Usage: heapless engine <command> DIR [options]

Commands (DIR is an engine directory; stats, dump and verify read one a running server holds open, the others
refuse it with LOCKED):
  stats DIR              figures per level, amplifications, caches, bloom filter, each table's properties
  dump DIR               every live entry in key order (key => value; non-text bytes as 0x hex)
  verify DIR             check every checksum of every file; names each bad file and offset
  compact DIR            compact the whole key range down the levels
  repair DIR             rebuild the manifest from the tables and logs present (damaged files, and copies of
                         what it replaces, go to DIR/lost/); refuses a directory holding none of the engine's
                         files (CURRENT, MANIFEST-*, *.log, *.sst) unless given --create
  checkpoint DIR TARGET  write a consistent, openable copy of DIR into TARGET (new or empty, not inside DIR)

Options:
  --json                 print JSON (dump: one JSON object per line) instead of text
  --progress             progress on stderr (default when stderr is a terminal)
  --start KEY            dump: from KEY (included)
  --end KEY              dump: up to KEY (excluded)
  --limit N              dump: at most N entries
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
    for (const name of ['start', 'end', 'limit'] as const) {
      if (values[name] !== undefined) throw new ActorError('HEAPLESS_ERR_USAGE', `--${name} is an option of dump`);
    }
  }
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
    start: values.start,
    end: values.end,
    limit,
    create: values.create ?? false,
  };
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
      create: { type: 'boolean' },
    },
  });
}
