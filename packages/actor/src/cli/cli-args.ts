import { MAX_TIMER_MS } from '@heapless/engine';
import { type FlagGroup, groupsUsage, parseFlags, usageError } from './flags.js';
import { FOLLOW_GROUP, type FollowArgs, followArgs } from './follow-args.js';
import { configFlags, ENGINE_GROUP, type EngineTuning, engineTuning } from './serve-config.js';

/** `heapless serve` as parsed. */
export interface ServeArgs {
  command: 'serve';
  /** Data directory; ignored with `memory`. */
  data: string;
  /** Keep the map in memory only: nothing is read or written on disk. */
  memory: boolean;
  /**
   * The directory under which remote callers may make live checkpoints (`checkpoint(name)`, `POST /v1/kv/_checkpoint`),
   * each in `<root>/<name>`; undefined: checkpoints are refused (FORBIDDEN).
   */
  checkpointRoot: string | undefined;
  host: string;
  port: number;
  /** `--tcp-port`: also serve raw TCP (or TLS) on this port; undefined for none. */
  tcpPort: number | undefined;
  /** From `--token` or the `HEAPLESS_TOKEN` environment variable (which, unlike argv, `ps` does not show). */
  token: string | undefined;
  /** Every write is fsynced before it is acknowledged. */
  sync: boolean;
  /** pino level: fatal, error, warn, info, debug, trace, silent. */
  logLevel: string;
  /** Per-connection bounds (undefined: publish's defaults). */
  maxInFlight: number | undefined;
  maxRequestBytes: number | undefined;
  maxReplyBytes: number | undefined;
  /** Open connections, and timeouts in ms (undefined: publish's defaults). */
  maxConnections: number | undefined;
  headersTimeoutMs: number | undefined;
  requestTimeoutMs: number | undefined;
  keepAliveTimeoutMs: number | undefined;
  heartbeatMs: number | undefined;
  /** Origins of the web pages that may use the server (`--allow-origin`, repeatable). */
  allowedOrigins: string[];
  /** Host names clients may use besides IP addresses and localhost (`--allow-host`, repeatable). */
  allowedHosts: string[];
  /** Accept the token in a WebSocket URL's query. */
  allowTokenInQuery: boolean;
  /** PEM files of the certificate chain and its key: serve HTTPS and WSS (both or neither). */
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  /** Listen off loopback without TLS. */
  insecure: boolean;
  /** Engine options of the persisted map (from the engine flags and the config file's "engine"). */
  engine: EngineTuning;
  /** Follow a change stream on NATS JetStream (`--follow`), or undefined. */
  follow: FollowArgs | undefined;
}

/** A parsed command line. */
export type CliArgs = ServeArgs | { command: 'help' } | { command: 'version' };

/** The options of serve, as its usage shows them (`config`: the option's key in `--config`'s file). */
const SERVE_GROUP = {
  title: 'Options of serve:',
  column: 18,
  flags: {
    data: {
      type: 'string',
      default: './heapless-data',
      config: 'data',
      arg: 'DIR',
      help: ['data directory (default ./heapless-data)'],
    },
    memory: { type: 'boolean', config: 'memory', help: ['keep everything in memory, write nothing to disk'] },
    'checkpoint-root': {
      type: 'string',
      config: 'checkpointRoot',
      arg: 'DIR',
      help: [
        'let callers with the token make live checkpoints, each in DIR/NAME',
        '(default: checkpoints are refused)',
      ],
    },
    host: {
      type: 'string',
      default: '127.0.0.1',
      config: 'host',
      arg: 'HOST',
      help: ['address to listen on (default 127.0.0.1; any other needs a token, and TLS', 'or --insecure)'],
    },
    port: {
      type: 'integer',
      min: 0,
      max: 65535,
      default: 7070,
      config: 'port',
      arg: 'PORT',
      help: ['port (default 7070; 0 picks a free one)'],
    },
    'tcp-port': {
      type: 'integer',
      min: 0,
      max: 65535,
      config: 'tcpPort',
      arg: 'PORT',
      help: ['also serve raw TCP on this port (tcp://, tls:// with TLS; 0 picks a free one)'],
    },
    // From the environment too, which, unlike argv, `ps` does not show.
    token: {
      type: 'string',
      env: 'HEAPLESS_TOKEN',
      config: 'token',
      arg: 'TOKEN',
      help: ['token clients must present (default: $HEAPLESS_TOKEN)'],
    },
    'tls-cert': {
      type: 'string',
      config: 'tlsCert',
      arg: 'FILE',
      help: ['serve HTTPS and WSS with this PEM certificate (chain) ...'],
    },
    'tls-key': { type: 'string', config: 'tlsKey', arg: 'FILE', help: ['... and this PEM private key'] },
    insecure: {
      type: 'boolean',
      config: 'insecure',
      help: ['listen off loopback without TLS (the token and data travel in clear)'],
    },
    sync: { type: 'boolean', config: 'sync', help: ['fsync every write before acknowledging it'] },
    'log-level': {
      type: 'string',
      default: 'info',
      config: 'logLevel',
      arg: 'LVL',
      help: ['fatal|error|warn|info|debug|trace|silent (default info)'],
    },
    version: { type: 'boolean', help: ['print the version'] },
    help: { type: 'boolean', short: 'h' },
  },
} as const satisfies FlagGroup;

const CALLERS_GROUP = {
  title: 'Who may call (a browser page is refused unless its origin is allowed):',
  column: 25,
  flags: {
    'allow-origin': {
      type: 'strings',
      config: 'allowedOrigins',
      arg: 'ORIGIN',
      help: [
        'a web page origin (scheme://host[:port], or *) that may use the server,',
        'with CORS; repeat for more (default none)',
      ],
    },
    'allow-host': {
      type: 'strings',
      config: 'allowedHosts',
      arg: 'NAME',
      help: [
        'a host name clients use besides IP addresses and localhost; other names',
        'in Host are refused with 421 (DNS rebinding); repeatable',
      ],
    },
    'allow-token-in-query': {
      type: 'boolean',
      config: 'allowTokenInQuery',
      help: ['accept the token as ?token= in the WebSocket URL (it ends up in logs)'],
    },
  },
} as const satisfies FlagGroup;

const LIMITS_GROUP = {
  title: 'Limits per connection (past one, the server stops reading that connection):',
  column: 25,
  flags: {
    'max-in-flight': {
      type: 'integer',
      min: 1,
      config: 'maxInFlight',
      arg: 'N',
      help: ['calls read and not yet answered (default 4096)'],
    },
    'max-request-bytes': {
      type: 'integer',
      min: 1,
      config: 'maxRequestBytes',
      arg: 'N',
      help: ['bytes of calls read and not yet answered (default 4194304, 4 MiB)'],
    },
    'max-reply-bytes': {
      type: 'integer',
      min: 1,
      config: 'maxReplyBytes',
      arg: 'N',
      help: [
        'bytes of replies the client has not read yet; no more of its calls',
        'run until they are written (default 1048576, 1 MiB); also the',
        'most one getMany answers (more is RESULT_TOO_LARGE)',
      ],
    },
  },
} as const satisfies FlagGroup;

// Timeouts become timers, which take at most MAX_TIMER_MS.
const TIMEOUTS_GROUP = {
  title: 'Slow and dead connections:',
  column: 25,
  flags: {
    'max-connections': {
      type: 'integer',
      min: 1,
      config: 'maxConnections',
      arg: 'N',
      help: ['open connections; more are closed as they arrive (default 4096)'],
    },
    'headers-timeout': {
      type: 'integer',
      min: 1,
      max: MAX_TIMER_MS,
      config: 'headersTimeoutMs',
      arg: 'MS',
      help: ["time to send a request's headers, an upgrade's too (default 10000)"],
    },
    'request-timeout': {
      type: 'integer',
      min: 1,
      max: MAX_TIMER_MS,
      config: 'requestTimeoutMs',
      arg: 'MS',
      help: ['time to send a whole HTTP request (default 30000)'],
    },
    'keep-alive-timeout': {
      type: 'integer',
      min: 1,
      max: MAX_TIMER_MS,
      config: 'keepAliveTimeoutMs',
      arg: 'MS',
      help: ['idle time of a kept-alive HTTP connection (default 5000)'],
    },
    heartbeat: {
      type: 'integer',
      min: 1,
      max: MAX_TIMER_MS,
      config: 'heartbeatMs',
      arg: 'MS',
      help: ['WebSocket ping interval; a peer silent for a whole interval is', 'closed (default 30000)'],
    },
  },
  note: '  (each timeout is at most 2147483647 ms, the longest a Node timer takes)',
} as const satisfies FlagGroup;

/** The options serve's config file may hold by name (besides "engine"). */
const SERVE_OWN_FLAGS = {
  ...SERVE_GROUP.flags,
  ...CALLERS_GROUP.flags,
  ...LIMITS_GROUP.flags,
  ...TIMEOUTS_GROUP.flags,
};

const SERVE_FLAGS = { ...SERVE_OWN_FLAGS, ...FOLLOW_GROUP.flags, ...ENGINE_GROUP.flags };

export const USAGE = `Usage: heapless <command> [options]

Commands:
  serve             serve a KV actor over WebSocket and HTTP on one port
  engine ...        tools for an engine directory: stats, dump, verify, compact, repair,
                    checkpoint (heapless engine --help)
  checkpoint publish  publish a follower's data directory as a checkpoint in the JetStream
                    object store (heapless checkpoint --help)
  help              print this text

${groupsUsage([SERVE_GROUP, CALLERS_GROUP, LIMITS_GROUP, TIMEOUTS_GROUP, FOLLOW_GROUP, ENGINE_GROUP])}`;

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Parses `argv` (without node and the script). Throws `ActorError` `HEAPLESS_ERR_ACTOR_USAGE` with the reason. */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliArgs {
  let parsed = parseFlags(SERVE_FLAGS, argv, env);
  // The config file's options go first, so that the command line's win; one parser checks both.
  const config = parsed.raw.config;
  if (typeof config === 'string')
    parsed = parseFlags(SERVE_FLAGS, [...configFlags(config, SERVE_OWN_FLAGS), ...argv], env);
  const { positionals, given } = parsed;
  if (given.has('version')) return { command: 'version' };
  const [command, ...rest] = positionals;
  if (given.has('help') || command === undefined || command === 'help') return { command: 'help' };
  if (command !== 'serve') throw usageError(`unknown command ${command}`);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  const values = parsed.values();
  if (!LEVELS.has(values['log-level'])) throw usageError(`--log-level ${values['log-level']} is not a pino level`);
  if (values.token === '') throw usageError('the token must not be empty');
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    throw usageError('--tls-cert and --tls-key go together');
  }
  return {
    command: 'serve',
    tlsCert: values['tls-cert'],
    tlsKey: values['tls-key'],
    insecure: values.insecure,
    maxInFlight: values['max-in-flight'],
    maxRequestBytes: values['max-request-bytes'],
    maxReplyBytes: values['max-reply-bytes'],
    maxConnections: values['max-connections'],
    headersTimeoutMs: values['headers-timeout'],
    requestTimeoutMs: values['request-timeout'],
    keepAliveTimeoutMs: values['keep-alive-timeout'],
    heartbeatMs: values.heartbeat,
    allowedOrigins: values['allow-origin'],
    allowedHosts: values['allow-host'],
    allowTokenInQuery: values['allow-token-in-query'],
    data: values.data,
    memory: values.memory,
    checkpointRoot: checkpointRootOf(values['checkpoint-root'], values.memory),
    host: values.host,
    port: values.port,
    tcpPort: values['tcp-port'],
    token: values.token,
    sync: values.sync,
    logLevel: values['log-level'],
    engine: engineTuning(values),
    follow: followArgs(values, given, values.memory),
  };
}

/** `--checkpoint-root` checked: a non-empty path, and a map that is persisted (a memory map has nothing to copy). */
function checkpointRootOf(root: string | undefined, memory: boolean): string | undefined {
  if (root === undefined) return undefined;
  if (root === '') throw usageError('--checkpoint-root must not be empty');
  if (memory) throw usageError('--checkpoint-root needs a persisted map, not --memory');
  return root;
}
