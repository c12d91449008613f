/**
 * `heapless serve --follow`'s flags: the server follows a change stream on NATS JetStream (packages/replica) into
 * its map, and sends its writes through that stream.
 */
import { ActorError } from '../errors.js';
import { MAX_TIMER_MS } from '../server/publish-options.js';
import { integerFlag } from './serve-config.js';

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
  const checkpointEvery = integerFlag(values, 'checkpoint-every', 1);
  if (checkpointEvery !== undefined && bucket === undefined) throw usage('--checkpoint-every needs --bucket');
  return {
    servers,
    stream,
    schema: (values.schema as string | undefined) ?? 'default',
    maxReplay: integerFlag(values, 'max-replay', 0),
    bucket,
    serveStale: values['serve-stale'] === true,
    checkpointEvery,
    keepCheckpoints: integerFlag(values, 'keep-checkpoints', 1),
    // A timer's delay: at most MAX_TIMER_MS, or it would fire at once.
    writeTimeoutMs: integerFlag(values, 'write-timeout', 1, MAX_TIMER_MS) ?? DEFAULT_WRITE_TIMEOUT_MS,
  };
}
