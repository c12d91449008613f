/**
 * How the benchmark runs nats-server: in the foreground with JetStream, on a free loopback port, its store in the
 * run's temporary directory, from the command line alone (no config file: one server needs none).
 */
import { findExecutable } from '../server/find-executable.js';
import { LOOPBACK } from '../server/free-port.js';
import type { ServerCommand } from '../server/server-process.js';

/** nats-server with JetStream listens within a second; anything slower is broken. */
const READY_TIMEOUT_MS = 30_000;

/** The nats-server binary, or undefined when it is not installed (Debian puts it in /usr/sbin). */
export function natsServerBinary(): string | undefined {
  return findExecutable('nats-server', ['/usr/sbin']);
}

/** How to get it on Debian and Ubuntu, for "not available" messages. */
export const NATS_INSTALL_HINT = 'install with: apt-get install -y nats-server (or node scripts/system-deps.mjs)';

/** The command for `binary` on `port`, its JetStream store under `storeDir`. */
export function natsServerCommand(binary: string, port: number, storeDir: string): ServerCommand {
  return {
    name: 'nats-server',
    file: binary,
    // The client port accepts connections only after JetStream has started, so "listening" means ready.
    args: ['-a', LOOPBACK, '-p', String(port), '-js', '-sd', storeDir],
    port,
    readyTimeoutMs: READY_TIMEOUT_MS,
  };
}
