/**
 * How the benchmark runs redis-server: in the foreground, on a free loopback port, persistence off (no RDB
 * snapshots, no append-only file: `--save ''`, `--appendonly no`), its working directory in the run's temporary
 * directory, its log on stdout (kept for error messages).
 */

import { LOOPBACK } from './free-port.js';
import type { ServerCommand } from './server-process.js';

/** redis-server starts in milliseconds; anything slower than this is broken. */
const READY_TIMEOUT_MS = 20_000;

/** The command for `redisServer` (its path) on `port`, with `dir` as its working directory. */
export function redisServerCommand(redisServer: string, port: number, dir: string): ServerCommand {
  return {
    name: 'redis-server',
    file: redisServer,
    args: [
      '--port',
      String(port),
      '--bind',
      LOOPBACK,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--logfile',
      '',
    ],
    port,
    readyTimeoutMs: READY_TIMEOUT_MS,
  };
}
