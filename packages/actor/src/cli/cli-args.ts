import { parseArgs } from 'node:util';
import { ActorError } from '../errors.js';
import { MAX_TIMER_MS } from '../server/publish-options.js';
import { FOLLOW_FLAG_OPTIONS, FOLLOW_USAGE, type FollowArgs, followArgs } from './follow-args.js';
import {
  configFlags,
  ENGINE_FLAG_OPTIONS,
  ENGINE_FLAGS_USAGE,
  type EngineTuning,
  engineTuning,
  integerFlag,
} from './serve-config.js';

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

export const USAGE = `Usage: heapless <command> [options]

Commands:
  serve             serve a KV actor over WebSocket and HTTP on one port
  engine ...        tools for an engine directory: stats, dump, verify, compact, repair,
                    checkpoint (heapless engine --help)
  checkpoint publish  publish a follower's data directory as a checkpoint in the JetStream
                    object store (heapless checkpoint --help)
  help              print this text

Options of serve:
  --data DIR        data directory (default ./heapless-data)
  --memory          keep everything in memory, write nothing to disk
  --checkpoint-root DIR
                    let callers with the token make live checkpoints, each in DIR/NAME
                    (default: checkpoints are refused)
  --host HOST       address to listen on (default 127.0.0.1; any other needs a token, and TLS
                    or --insecure)
  --port PORT       port (default 7070; 0 picks a free one)
  --token TOKEN     token clients must present (default: $HEAPLESS_TOKEN)
  --tls-cert FILE   serve HTTPS and WSS with this PEM certificate (chain) ...
  --tls-key FILE    ... and this PEM private key
  --insecure        listen off loopback without TLS (the token and data travel in clear)
  --sync            fsync every write before acknowledging it
  --log-level LVL   fatal|error|warn|info|debug|trace|silent (default info)
  --version         print the version

Who may call (a browser page is refused unless its origin is allowed):
  --allow-origin ORIGIN    a web page origin (scheme://host[:port], or *) that may use the server,
                           with CORS; repeat for more (default none)
  --allow-host NAME        a host name clients use besides IP addresses and localhost; other names
                           in Host are refused with 421 (DNS rebinding); repeatable
  --allow-token-in-query   accept the token as ?token= in the WebSocket URL (it ends up in logs)

Limits per connection (past one, the server stops reading that connection):
  --max-in-flight N        calls read and not yet answered (default 4096)
  --max-request-bytes N    bytes of calls read and not yet answered (default 4194304, 4 MiB)
  --max-reply-bytes N      bytes of replies the client has not read yet; no more of its calls
                           run until they are written (default 1048576, 1 MiB); also the
                           most one getMany answers (more is RESULT_TOO_LARGE)

Slow and dead connections:
  --max-connections N      open connections; more are closed as they arrive (default 4096)
  --headers-timeout MS     time to send a request's headers, an upgrade's too (default 10000)
  --request-timeout MS     time to send a whole HTTP request (default 30000)
  --keep-alive-timeout MS  idle time of a kept-alive HTTP connection (default 5000)
  --heartbeat MS           WebSocket ping interval; a peer silent for a whole interval is
                           closed (default 30000)
  (each timeout is at most 2147483647 ms, the longest a Node timer takes)

${FOLLOW_USAGE}
${ENGINE_FLAGS_USAGE}`;

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Parses `argv` (without node and the script). Throws `ActorError` `HEAPLESS_ERR_USAGE` with the reason. */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliArgs {
  let parsed = parseOrThrow(argv);
  // The config file's options go first, so that the command line's win; one parser checks both.
  const config = parsed.values.config;
  if (config !== undefined) parsed = parseOrThrow([...configFlags(config), ...argv]);
  const { values, positionals } = parsed;
  if (values.version) return { command: 'version' };
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') return { command: 'help' };
  if (command !== 'serve') throw new ActorError('HEAPLESS_ERR_USAGE', `unknown command ${command}`);
  if (rest.length > 0) throw new ActorError('HEAPLESS_ERR_USAGE', `unexpected argument ${rest[0]}`);
  const port = Number(values.port ?? '7070');
  if (!/^\d+$/.test(values.port ?? '7070') || port > 65535) {
    throw new ActorError('HEAPLESS_ERR_USAGE', `--port must be an integer from 0 to 65535, got ${values.port}`);
  }
  const logLevel = values['log-level'] ?? 'info';
  if (!LEVELS.has(logLevel)) throw new ActorError('HEAPLESS_ERR_USAGE', `--log-level ${logLevel} is not a pino level`);
  const token = values.token ?? env.HEAPLESS_TOKEN;
  if (token === '') throw new ActorError('HEAPLESS_ERR_USAGE', 'the token must not be empty');
  const tlsCert = values['tls-cert'];
  const tlsKey = values['tls-key'];
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ActorError('HEAPLESS_ERR_USAGE', '--tls-cert and --tls-key go together');
  }
  return {
    command: 'serve',
    tlsCert,
    tlsKey,
    insecure: values.insecure ?? false,
    maxInFlight: integerFlag(values, 'max-in-flight', 1),
    maxRequestBytes: integerFlag(values, 'max-request-bytes', 1),
    maxReplyBytes: integerFlag(values, 'max-reply-bytes', 1),
    maxConnections: integerFlag(values, 'max-connections', 1),
    // Timeouts become timers, which take at most MAX_TIMER_MS.
    headersTimeoutMs: integerFlag(values, 'headers-timeout', 1, MAX_TIMER_MS),
    requestTimeoutMs: integerFlag(values, 'request-timeout', 1, MAX_TIMER_MS),
    keepAliveTimeoutMs: integerFlag(values, 'keep-alive-timeout', 1, MAX_TIMER_MS),
    heartbeatMs: integerFlag(values, 'heartbeat', 1, MAX_TIMER_MS),
    allowedOrigins: values['allow-origin'] ?? [],
    allowedHosts: values['allow-host'] ?? [],
    allowTokenInQuery: values['allow-token-in-query'] ?? false,
    data: values.data ?? './heapless-data',
    memory: values.memory ?? false,
    checkpointRoot: checkpointRootOf(values['checkpoint-root'], values.memory ?? false),
    host: values.host ?? '127.0.0.1',
    port,
    token,
    sync: values.sync ?? false,
    logLevel,
    engine: engineTuning(values),
    follow: followArgs(values, values.memory ?? false),
  };
}

function parseOrThrow(argv: readonly string[]): ReturnType<typeof parseOptions> {
  try {
    return parseOptions(argv);
  } catch (e) {
    throw new ActorError('HEAPLESS_ERR_USAGE', (e as Error).message, { cause: e });
  }
}

/** `--checkpoint-root` checked: a non-empty path, and a map that is persisted (a memory map has nothing to copy). */
function checkpointRootOf(root: string | undefined, memory: boolean): string | undefined {
  if (root === undefined) return undefined;
  if (root === '') throw new ActorError('HEAPLESS_ERR_USAGE', '--checkpoint-root must not be empty');
  if (memory) throw new ActorError('HEAPLESS_ERR_USAGE', '--checkpoint-root needs a persisted map, not --memory');
  return root;
}

function parseOptions(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      data: { type: 'string' },
      memory: { type: 'boolean' },
      'checkpoint-root': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      token: { type: 'string' },
      sync: { type: 'boolean' },
      'log-level': { type: 'string' },
      'max-in-flight': { type: 'string' },
      'max-request-bytes': { type: 'string' },
      'max-reply-bytes': { type: 'string' },
      'max-connections': { type: 'string' },
      'headers-timeout': { type: 'string' },
      'request-timeout': { type: 'string' },
      'keep-alive-timeout': { type: 'string' },
      heartbeat: { type: 'string' },
      'allow-origin': { type: 'string', multiple: true },
      'allow-host': { type: 'string', multiple: true },
      'allow-token-in-query': { type: 'boolean' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      insecure: { type: 'boolean' },
      config: { type: 'string' },
      ...ENGINE_FLAG_OPTIONS,
      ...FOLLOW_FLAG_OPTIONS,
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean' },
    },
  });
}
