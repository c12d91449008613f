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
import { ActorError } from '../errors.js';

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

/** parseArgs specs of the engine flags. */
export const ENGINE_FLAG_OPTIONS = {
  'disable-wal': { type: 'boolean' },
  'block-cache-size': { type: 'string' },
  compression: { type: 'string' },
  'num-levels': { type: 'string' },
  'level-base-bytes': { type: 'string' },
  'level-multiplier': { type: 'string' },
  'write-buffer-size': { type: 'string' },
  'target-file-size': { type: 'string' },
  'bloom-bits': { type: 'string' },
  'periodic-compaction': { type: 'string' },
  'wal-retention-bytes': { type: 'string' },
} as const;

export const ENGINE_FLAGS_USAGE = `Engine tuning (persisted maps; also "engine" in the config file):
  --config FILE            read options from a JSON file (serve's options by camelCase name, and
                           "engine": {...}); flags given here win; unknown keys are refused
  --disable-wal            no write-ahead log: writes since the last flush are lost on a crash
  --block-cache-size N     bytes of the block cache (0 = off; default 33554432, 32 MiB)
  --compression C          none|snappy|lz4|zstd|deflate (default snappy)
  --num-levels N           levels of the LSM tree (default 7)
  --level-base-bytes N     bytes level 1 may hold (default 10485760)
  --level-multiplier N     each deeper level holds N times more (default 10)
  --write-buffer-size N    bytes of a memtable (default 4194304)
  --target-file-size N     bytes of a compaction's output tables (default 2097152)
  --bloom-bits N           bloom filter bits per key (0 = none; default 10)
  --periodic-compaction P  compact everything every P seconds, or daily at P = HH:MM (local time)
  --wal-retention-bytes N  bytes of WALs already in tables kept for watchers that resume from a
                           sequence (0 = none; default 67108864, 64 MiB)
`;

/** Engine option name → its flag, for flags with a value; `wal` is `--disable-wal`. */
const ENGINE_FLAG_OF: Record<Exclude<keyof EngineTuning, 'wal' | 'periodicCompaction'>, string> = {
  blockCacheSize: 'block-cache-size',
  compression: 'compression',
  numLevels: 'num-levels',
  maxBytesForLevelBase: 'level-base-bytes',
  levelSizeMultiplier: 'level-multiplier',
  writeBufferSize: 'write-buffer-size',
  targetFileSize: 'target-file-size',
  bloomBitsPerKey: 'bloom-bits',
  walRetentionBytes: 'wal-retention-bytes',
};

/** Serve option (camelCase, as in the config file) → its flag and kind. */
const SERVE_KEYS: Record<string, { flag: string; kind: 'string' | 'integer' | 'boolean' | 'strings' }> = {
  data: { flag: 'data', kind: 'string' },
  memory: { flag: 'memory', kind: 'boolean' },
  checkpointRoot: { flag: 'checkpoint-root', kind: 'string' },
  host: { flag: 'host', kind: 'string' },
  port: { flag: 'port', kind: 'integer' },
  token: { flag: 'token', kind: 'string' },
  sync: { flag: 'sync', kind: 'boolean' },
  logLevel: { flag: 'log-level', kind: 'string' },
  maxInFlight: { flag: 'max-in-flight', kind: 'integer' },
  maxRequestBytes: { flag: 'max-request-bytes', kind: 'integer' },
  maxReplyBytes: { flag: 'max-reply-bytes', kind: 'integer' },
  maxConnections: { flag: 'max-connections', kind: 'integer' },
  headersTimeoutMs: { flag: 'headers-timeout', kind: 'integer' },
  requestTimeoutMs: { flag: 'request-timeout', kind: 'integer' },
  keepAliveTimeoutMs: { flag: 'keep-alive-timeout', kind: 'integer' },
  heartbeatMs: { flag: 'heartbeat', kind: 'integer' },
  allowedOrigins: { flag: 'allow-origin', kind: 'strings' },
  allowedHosts: { flag: 'allow-host', kind: 'strings' },
  allowTokenInQuery: { flag: 'allow-token-in-query', kind: 'boolean' },
  tlsCert: { flag: 'tls-cert', kind: 'string' },
  tlsKey: { flag: 'tls-key', kind: 'string' },
  insecure: { flag: 'insecure', kind: 'boolean' },
};

/**
 * The engine's bound on `periodicCompaction.everySeconds` (366 days), checked here too so that the command exits 2
 * naming the flag instead of failing the engine's open (importing the engine to ask would load it for `--help`).
 */
const MAX_PERIOD_SECONDS = 366 * 24 * 3600;

const COMPRESSIONS = ['none', 'snappy', 'lz4', 'zstd', 'deflate'];

const KIND_NAMES = { string: 'a string', integer: 'an integer', boolean: 'a boolean', strings: 'an array of strings' };

function usage(message: string): ActorError {
  return new ActorError('HEAPLESS_ERR_USAGE', message);
}

/**
 * The integer from `min` to `max` given as `--name` (decimal digits only), or undefined when absent; throws
 * HEAPLESS_ERR_USAGE naming the flag otherwise.
 */
export function integerFlag(
  values: Record<string, unknown>,
  name: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= min && n <= max)) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw usage(`--${name} must be an integer ${range}, got ${String(v)}`);
  }
  return n;
}

/** The flags the config file at `path` stands for. Throws HEAPLESS_ERR_USAGE for an unreadable or bad file. */
export function configFlags(path: string): string[] {
  let config: unknown;
  try {
    config = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw usage(`--config ${path}: ${(e as Error).message}`);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw usage(`--config ${path}: the file must hold a JSON object`);
  }
  const flags: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (key === 'engine') {
      flags.push(...engineConfigFlags(path, value));
      continue;
    }
    // Not SERVE_KEYS[key]: "__proto__", "constructor" or "toString" would find Object.prototype's.
    const spec = Object.hasOwn(SERVE_KEYS, key) ? SERVE_KEYS[key] : undefined;
    if (spec === undefined) {
      throw usage(
        `--config ${path}: unknown key "${key}" (known: ${[...Object.keys(SERVE_KEYS), 'engine'].join(', ')})`,
      );
    }
    const bad = () => usage(`--config ${path}: "${key}" must be ${KIND_NAMES[spec.kind]}`);
    if (spec.kind === 'boolean') {
      if (typeof value !== 'boolean') throw bad();
      if (value) flags.push(`--${spec.flag}`);
    } else if (spec.kind === 'strings') {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw bad();
      for (const v of value) flags.push(`--${spec.flag}`, v);
    } else {
      if (spec.kind === 'integer' ? !Number.isInteger(value) : typeof value !== 'string') throw bad();
      flags.push(`--${spec.flag}`, String(value));
    }
  }
  return flags;
}

function engineConfigFlags(path: string, engine: unknown): string[] {
  if (engine === null || typeof engine !== 'object' || Array.isArray(engine)) {
    throw usage(`--config ${path}: "engine" must be an object`);
  }
  const flags: string[] = [];
  const known = ['wal', 'periodicCompaction', ...Object.keys(ENGINE_FLAG_OF)];
  for (const [key, value] of Object.entries(engine)) {
    const at = `--config ${path}: engine.${key}`;
    if (key === 'wal') {
      if (typeof value !== 'boolean') throw usage(`${at} must be a boolean`);
      if (!value) flags.push('--disable-wal');
    } else if (key === 'periodicCompaction') {
      const v = value as { everySeconds?: unknown; at?: unknown } | null;
      if (typeof v?.everySeconds === 'number' && Object.keys(v).length === 1) {
        flags.push('--periodic-compaction', String(v.everySeconds));
      } else if (typeof v?.at === 'string' && Object.keys(v).length === 1) {
        flags.push('--periodic-compaction', v.at);
      } else throw usage(`${at} must be { "everySeconds": N } or { "at": "HH:MM" }`);
    } else if (Object.hasOwn(ENGINE_FLAG_OF, key)) {
      const flag = ENGINE_FLAG_OF[key as keyof typeof ENGINE_FLAG_OF];
      if (key === 'compression' ? typeof value !== 'string' : !Number.isInteger(value)) {
        throw usage(`${at} must be ${key === 'compression' ? 'a string' : 'an integer'}`);
      }
      flags.push(`--${flag}`, String(value));
    } else throw usage(`${at}: unknown engine option (known: ${known.join(', ')})`);
  }
  return flags;
}

/** The engine tuning the parsed engine flags give (absent flags: absent, the engine's defaults). */
export function engineTuning(values: Record<string, unknown>): EngineTuning {
  const out: EngineTuning = {};
  if (values['disable-wal'] === true) out.wal = false;
  for (const [option, flag] of Object.entries(ENGINE_FLAG_OF) as [keyof typeof ENGINE_FLAG_OF, string][]) {
    const v = values[flag];
    if (v === undefined) continue;
    if (option === 'compression') {
      if (!COMPRESSIONS.includes(v as string)) {
        throw usage(`--compression must be one of ${COMPRESSIONS.join(', ')}, got ${String(v)}`);
      }
      out.compression = v as EngineTuning['compression'];
      continue;
    }
    out[option] = integerFlag(values, flag, 0);
  }
  const p = values['periodic-compaction'];
  if (typeof p === 'string') {
    const seconds = /^\d+(\.\d+)?$/.test(p) ? Number(p) : Number.NaN;
    if (/^([01]\d|2[0-3]):[0-5]\d$/.test(p)) out.periodicCompaction = { at: p };
    else if (seconds >= 0.001 && seconds <= MAX_PERIOD_SECONDS) out.periodicCompaction = { everySeconds: seconds };
    else throw usage(`--periodic-compaction must be seconds from 0.001 to ${MAX_PERIOD_SECONDS} or HH:MM, got ${p}`);
  }
  return out;
}
