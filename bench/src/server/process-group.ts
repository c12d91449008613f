/**
 * The servers one benchmark run has started, so that every one of them is stopped on every path: at the end of a
 * case, when the run fails, and when the run's process is told to stop (the orchestrator sends SIGTERM on Ctrl-C;
 * a terminal's SIGINT reaches it too) or exits.
 */
import { type ServerCommand, type ServerProcess, spawnServer } from './server-process.js';

/** Owns started servers; call {@link close} in a `finally`. */
export class ProcessGroup {
  private readonly servers = new Set<ServerProcess>();
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.killAll();
    // The conventional status of a process ended by a signal: 128 + its number.
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  private readonly onExit = () => this.killAll();

  constructor() {
    process.once('SIGTERM', this.onSignal);
    process.once('SIGINT', this.onSignal);
    process.once('exit', this.onExit);
  }

  /** Spawns a server, waits until it listens, and owns it; a server that fails to start is stopped before rejecting. */
  async start(command: ServerCommand): Promise<ServerProcess> {
    const server = spawnServer(command);
    this.servers.add(server);
    try {
      await server.waitUntilListening();
    } catch (error) {
      await this.stop(server);
      throw error;
    }
    return server;
  }

  /** Stops one server (SIGTERM, then SIGKILL after a grace period) and forgets it. */
  async stop(server: ServerProcess): Promise<void> {
    await server.stop();
    this.servers.delete(server);
  }

  /** Stops every server still running and removes the signal handlers. */
  async close(): Promise<void> {
    await Promise.all([...this.servers].map((server) => this.stop(server)));
    process.off('SIGTERM', this.onSignal);
    process.off('SIGINT', this.onSignal);
    process.off('exit', this.onExit);
  }

  private killAll(): void {
    for (const server of this.servers) server.killNow();
  }
}
