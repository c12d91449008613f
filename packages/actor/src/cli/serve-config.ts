/**
 * `heapless serve`'s engine tuning flags and its config file (`--config heapless.json`).
 *
 * The config file is a JSON object holding serve's options by their camelCase names and an `engine` object of engine
 * options, e.g. `{ "port": 7070, "engine": { "wal": false, "blockCacheSize": 0, "compression": "zstd",
 * "periodicCompaction": { "at": "03:00" } } }`. It is turned into the flags it stands for, placed before those of
 * the command line, so that one parser checks both and a flag given on the command line wins. A key it does not know
 * is refused, naming the key and the ones it knows.
 */
import { readFileSync } from 'node:fs';
import type { EngineOptions } from '@heapless/engine';
import { configFlag, type FlagGroup, type FlagSpec, type FlagTable, type FlagValues, usageError } from './flags.js';

/** The engine options `heapless serve` exposes (the map sets `sync` from `--sync`). */
export type EngineTuning = Pick<
  EngineOptions,
  | 'wal'
  | 'blockCacheSize'
  | 'compression'
  | 'numLevels'
  | 'maxBytesForLevelBase'
  | 'levelSizeMultiplier'
  | 'writeBufferSize'
  | 'targetFileSize'
  | 'bloomBitsPerKey'
  | 'periodicCompaction'
  | 'walRetentionBytes'
>;

/**
 * Bytes of WALs whose data is in tables that `heapless serve` keeps unless told otherwise (the engine's default is
 * none): a watcher that overflowed or lost its connection resumes from its last sequence while the writes since are
 * within the last 64 MiB written, instead of meeting SEQUENCE_GONE at the next flush.
 */
export const SERVE_WAL_RETENTION_BYTES = 64 * 1024 * 1024;

/** The engine options a serving map opens with: the tuning given, over serve's own defaults. */
export function serveEngineOptions(tuning: EngineTuning): EngineTuning {
  return { walRetentionBytes: SERVE_WAL_RETENTION_BYTES, ...tuning };
}

/**
 * The engine tuning flags (and `--config`, whose file holds them too), as `heapless serve --help` shows them. Each
 * engine option with a plain value names its key in the config file's "engine" object; `wal` and
 * `periodicCompaction`, whose JSON form is not the flag's, are read by `engineConfigFlags`.
 */
export const ENGINE_GROUP = {
  title: 'Engine tuning (persisted maps; also "engine" in the config file):',
  column: 25,
  flags: {
    config: {
      type: 'string',
      arg: 'FILE',
      help: [
        "read options from a JSON file (serve's options by camelCase name, and",
        '"engine": {...}); flags given here win; unknown keys are refused',
      ],
    },
    'disable-wal': {
      type: 'boolean',
      help: ['no write-ahead log: writes since the last flush are lost on a crash'],
    },
    'block-cache-size': {
      type: 'integer',
      config: 'blockCacheSize',
      arg: 'N',
      help: ['bytes of the block cache (0 = off; default 33554432, 32 MiB)'],
    },
    compression: {
      type: 'string',
      choices: ['none', 'snappy', 'lz4', 'zstd', 'deflate'],
      config: 'compression',
      arg: 'C',
      help: ['none|snappy|lz4|zstd|deflate (default snappy)'],
    },
    'num-levels': { type: 'integer', config: 'numLevels', arg: 'N', help: ['levels of the LSM tree (default 7)'] },
    'level-base-bytes': {
      type: 'integer',
      config: 'maxBytesForLevelBase',
      arg: 'N',
      help: ['bytes level 1 may hold (default 10485760)'],
    },
    'level-multiplier': {
      type: 'integer',
      config: 'levelSizeMultiplier',
      arg: 'N',
      help: ['each deeper level holds N times more (default 10)'],
    },
    'write-buffer-size': {
      type: 'integer',
      config: 'writeBufferSize',
      arg: 'N',
      help: ['bytes of a memtable (default 4194304)'],
    },
    'target-file-size': {
      type: 'integer',
      config: 'targetFileSize',
      arg: 'N',
      help: ["bytes of a compaction's output tables (default 2097152)"],
    },
    'bloom-bits': {
      type: 'integer',
      config: 'bloomBitsPerKey',
      arg: 'N',
      help: ['bloom filter bits per key (0 = none; default 10)'],
    },
    'periodic-compaction': {
      type: 'string',
      arg: 'P',
      help: ['compact everything every P seconds, or daily at P = HH:MM (local time)'],
    },
    'wal-retention-bytes': {
      type: 'integer',
      config: 'walRetentionBytes',
      arg: 'N',
      help: [
        'bytes of WALs already in tables kept for watchers that resume from a',
        'sequence (0 = none; default 67108864, 64 MiB)',
      ],
    },
  },
} as const satisfies FlagGroup;

type EngineFlags = typeof ENGINE_GROUP.flags;

/** Engine option (the config file's name) → its flag, for the options whose JSON value is the flag's. */
const ENGINE_CONFIG = configNames(ENGINE_GROUP.flags);

/**
 * The engine's bound on `periodicCompaction.everySeconds` (366 days), checked here too so that the command exits 2
 * naming the flag instead of failing the engine's open (importing the engine to ask would load it for `--help`).
 */
const MAX_PERIOD_SECONDS = 366 * 24 * 3600;

/** Config-file name → flag name and spec, of the flags of `table` that have one, in the table's order. */
function configNames(table: FlagTable): Map<string, [string, FlagSpec]> {
  const names = new Map<string, [string, FlagSpec]>();
  for (const [flag, spec] of Object.entries(table)) if (spec.config !== undefined) names.set(spec.config, [flag, spec]);
  return names;
}

/**
 * The flags the config file at `path` stands for: its keys by the config names of `serveFlags`, and "engine".
 * Throws HEAPLESS_ERR_ACTOR_USAGE for an unreadable or bad file.
 */
export function configFlags(path: string, serveFlags: FlagTable): string[] {
  let config: unknown;
  try {
    config = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw usageError(`--config ${path}: ${(e as Error).message}`);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw usageError(`--config ${path}: the file must hold a JSON object`);
  }
  const names = configNames(serveFlags);
  const flags: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (key === 'engine') {
      flags.push(...engineConfigFlags(path, value));
      continue;
    }
    // A Map, not an object: "__proto__", "constructor" or "toString" would find Object.prototype's.
    const flag = names.get(key);
    if (flag === undefined) {
      throw usageError(`--config ${path}: unknown key "${key}" (known: ${[...names.keys(), 'engine'].join(', ')})`);
    }
    flags.push(...configFlag(flag[0], flag[1], value, `--config ${path}: "${key}"`));
  }
  return flags;
}

function engineConfigFlags(path: string, engine: unknown): string[] {
  if (engine === null || typeof engine !== 'object' || Array.isArray(engine)) {
    throw usageError(`--config ${path}: "engine" must be an object`);
  }
  const flags: string[] = [];
  for (const [key, value] of Object.entries(engine)) {
    const at = `--config ${path}: engine.${key}`;
    const flag = ENGINE_CONFIG.get(key);
    if (key === 'wal') {
      if (typeof value !== 'boolean') throw usageError(`${at} must be a boolean`);
      if (!value) flags.push('--disable-wal');
    } else if (key === 'periodicCompaction') {
      const v = value as { everySeconds?: unknown; at?: unknown } | null;
      if (typeof v?.everySeconds === 'number' && Object.keys(v).length === 1) {
        flags.push('--periodic-compaction', String(v.everySeconds));
      } else if (typeof v?.at === 'string' && Object.keys(v).length === 1) {
        flags.push('--periodic-compaction', v.at);
      } else throw usageError(`${at} must be { "everySeconds": N } or { "at": "HH:MM" }`);
    } else if (flag !== undefined) flags.push(...configFlag(flag[0], flag[1], value, at));
    else {
      const known = ['wal', 'periodicCompaction', ...ENGINE_CONFIG.keys()];
      throw usageError(`${at}: unknown engine option (known: ${known.join(', ')})`);
    }
  }
  return flags;
}

/** The engine tuning of the parsed engine flags (absent flags: absent, the engine's defaults). */
export function engineTuning(values: FlagValues<EngineFlags>): EngineTuning {
  const out: EngineTuning = {};
  if (values['disable-wal']) out.wal = false;
  for (const [option, [flag]] of ENGINE_CONFIG) {
    const v = values[flag as keyof EngineFlags];
    if (v !== undefined) (out as Record<string, unknown>)[option] = v;
  }
  const p = values['periodic-compaction'];
  if (p !== undefined) {
    const seconds = /^\d+(\.\d+)?$/.test(p) ? Number(p) : Number.NaN;
    if (/^([01]\d|2[0-3]):[0-5]\d$/.test(p)) out.periodicCompaction = { at: p };
    else if (seconds >= 0.001 && seconds <= MAX_PERIOD_SECONDS) out.periodicCompaction = { everySeconds: seconds };
    else {
      throw usageError(`--periodic-compaction must be seconds from 0.001 to ${MAX_PERIOD_SECONDS} or HH:MM, got ${p}`);
    }
  }
  return out;
}
