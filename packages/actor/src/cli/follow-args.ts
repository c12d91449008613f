/**
 * `heapless serve --follow`'s flags: the server follows a change stream on NATS JetStream (packages/replica) into
 * its map, and sends its writes through that stream.
 */
import { ActorError } from '../errors.js';

/** A following server's settings, from its flags. */
export interface FollowArgs {
  /** NATS server URLs (`--follow nats://HOST:PORT`, repeatable for a cluster's nodes). */
  servers: string[];
  stream: string;
  /** The schema id of the values (`--schema`, default `default`). */
  schema: string;
  /** Most messages replayed at start before the newest checkpoint is loaded instead. */
  maxReplay: number | undefined;
  /** The object store bucket of checkpoints (loading them at start, publishing them); none without it. */
  bucket: string | undefined;
  /** Listen at once, before catching up with the stream (`/healthz` says `caughtUp: false`). */
  serveStale: boolean;
  /** Publish a checkpoint after every this many messages applied (needs `--bucket`). */
  checkpointEvery: number | undefined;
  /** Checkpoints kept per schema and stream when publishing (default 3). */
  keepCheckpoints: number | undefined;
  /** How long a write may take to be in the log and applied here before it fails with UNAVAILABLE (ms). */
  writeTimeoutMs: number;
}

/** parseArgs specs of the follow flags. */
export const FOLLOW_FLAG_OPTIONS = {
  follow: { type: 'string', multiple: true },
  stream: { type: 'string' },
  schema: { type: 'string' },
  'max-replay': { type: 'string' },
  bucket: { type: 'string' },
  'serve-stale': { type: 'boolean' },
  'checkpoint-every': { type: 'string' },
  'keep-checkpoints': { type: 'string' },
  'write-timeout': { type: 'string' },
} as const;

export const FOLLOW_USAGE = `Following a change stream on NATS JetStream (a replica):
  --follow nats://HOST:PORT  follow the stream on this NATS server (repeat for a cluster's nodes);
                           writes go through the stream and answer once applied here;
                           NATS unreachable at start: serves DIR's follower data (writes
                           UNAVAILABLE) and follows on from it once connected
  --stream NAME            the change stream (required with --follow; created if missing)
  --schema ID              schema id of the values (default default); local data or a
                           checkpoint of another schema is not used
  --max-replay N           most messages replayed at start before the newest checkpoint is
                           loaded instead (default 100000)
  --bucket B               JetStream object store bucket of checkpoints (default: none)
  --serve-stale            listen before catching up (/healthz says caughtUp: false)
  --checkpoint-every N     publish a checkpoint after every N messages applied (needs --bucket)
  --keep-checkpoints N     checkpoints kept per schema and stream (default 3)
  --write-timeout MS       a write not in the log and applied here by then is UNAVAILABLE
                           (default 5000)
`;

const DEFAULT_WRITE_TIMEOUT_MS = 5_000;

function usage(message: string): ActorError {
  return new ActorError('HEAPLESS_ERR_USAGE', message);
}

/** The follow settings of parsed flags, or undefined without `--follow`. Throws HEAPLESS_ERR_USAGE. */
export function followArgs(values: Record<string, unknown>, memory: boolean): FollowArgs | undefined {
  const servers = values.follow as string[] | undefined;
  if (servers === undefined) {
    for (const flag of Object.keys(FOLLOW_FLAG_OPTIONS))
      if (values[flag] !== undefined) throw usage(`--${flag} goes with --follow`);
    return undefined;
  }
  for (const url of servers)
    if (!/^(nats|tls):\/\/[^\s/]+$/.test(url)) throw usage(`--follow takes nats://HOST:PORT, got ${url}`);
  if (memory) throw usage('--follow needs a data directory: it keeps its stream position there, not with --memory');
  const stream = values.stream as string | undefined;
  if (stream === undefined) throw usage('--follow needs --stream NAME');
  const bucket = values.bucket as string | undefined;
  const checkpointEvery = count(values, 'checkpoint-every', 1);
  if (checkpointEvery !== undefined && bucket === undefined) throw usage('--checkpoint-every needs --bucket');
  return {
    servers,
    stream,
    schema: (values.schema as string | undefined) ?? 'default',
    maxReplay: count(values, 'max-replay', 0),
    bucket,
    serveStale: values['serve-stale'] === true,
    checkpointEvery,
    keepCheckpoints: count(values, 'keep-checkpoints', 1),
    writeTimeoutMs: count(values, 'write-timeout', 1) ?? DEFAULT_WRITE_TIMEOUT_MS,
  };
}

/** The integer >= `min` given as `--name`, or undefined when absent. */
function count(values: Record<string, unknown>, name: string, min: number): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min)
    throw usage(`--${name} must be an integer >= ${min}, got ${String(v)}`);
  return Number(v);
}
