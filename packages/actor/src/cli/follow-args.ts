/**
 * `heapless serve --follow`'s flags: the server follows a change stream on NATS JetStream (packages/replica) into
 * its map, and sends its writes through that stream.
 */
import { MAX_TIMER_MS } from '@heapless/engine';
import { type FlagGroup, type FlagValues, usageError } from './flags.js';

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

/** The follow flags, as `heapless serve --help` shows them. */
export const FOLLOW_GROUP = {
  title: 'Following a change stream on NATS JetStream (a replica):',
  column: 25,
  flags: {
    follow: {
      type: 'strings',
      arg: 'nats://HOST:PORT',
      help: [
        "follow the stream on this NATS server (repeat for a cluster's nodes);",
        'writes go through the stream and answer once applied here;',
        "NATS unreachable at start: serves DIR's follower data (writes",
        'UNAVAILABLE) and follows on from it once connected',
      ],
    },
    stream: { type: 'string', arg: 'NAME', help: ['the change stream (required with --follow; created if missing)'] },
    schema: {
      type: 'string',
      default: 'default',
      arg: 'ID',
      help: ['schema id of the values (default default); local data or a', 'checkpoint of another schema is not used'],
    },
    'max-replay': {
      type: 'integer',
      min: 0,
      arg: 'N',
      help: ['most messages replayed at start before the newest checkpoint is', 'loaded instead (default 100000)'],
    },
    bucket: { type: 'string', arg: 'B', help: ['JetStream object store bucket of checkpoints (default: none)'] },
    'serve-stale': { type: 'boolean', help: ['listen before catching up (/healthz says caughtUp: false)'] },
    'checkpoint-every': {
      type: 'integer',
      min: 1,
      arg: 'N',
      help: ['publish a checkpoint after every N messages applied (needs --bucket)'],
    },
    'keep-checkpoints': {
      type: 'integer',
      min: 1,
      arg: 'N',
      help: ['checkpoints kept per schema and stream (default 3)'],
    },
    'write-timeout': {
      type: 'integer',
      // A timer's delay: at most MAX_TIMER_MS, or it would fire at once.
      min: 1,
      max: MAX_TIMER_MS,
      default: 5_000,
      arg: 'MS',
      help: ['a write not in the log and applied here by then is UNAVAILABLE', '(default 5000)'],
    },
  },
} as const satisfies FlagGroup;

type FollowFlags = typeof FOLLOW_GROUP.flags;

/**
 * The follow settings of parsed flags (`given`: the flags on the command line), or undefined without `--follow`.
 * Throws HEAPLESS_ERR_ACTOR_USAGE.
 */
export function followArgs(
  values: FlagValues<FollowFlags>,
  given: ReadonlySet<string>,
  memory: boolean,
): FollowArgs | undefined {
  if (!given.has('follow')) {
    for (const flag of Object.keys(FOLLOW_GROUP.flags))
      if (given.has(flag)) throw usageError(`--${flag} goes with --follow`);
    return undefined;
  }
  const servers = values.follow;
  for (const url of servers)
    if (!/^(nats|tls):\/\/[^\s/]+$/.test(url)) throw usageError(`--follow takes nats://HOST:PORT, got ${url}`);
  if (memory) {
    throw usageError('--follow needs a data directory: it keeps its stream position there, not with --memory');
  }
  if (values.stream === undefined) throw usageError('--follow needs --stream NAME');
  if (values['checkpoint-every'] !== undefined && values.bucket === undefined) {
    throw usageError('--checkpoint-every needs --bucket');
  }
  return {
    servers,
    stream: values.stream,
    schema: values.schema,
    maxReplay: values['max-replay'],
    bucket: values.bucket,
    serveStale: values['serve-stale'],
    checkpointEvery: values['checkpoint-every'],
    keepCheckpoints: values['keep-checkpoints'],
    writeTimeoutMs: values['write-timeout'],
  };
}
