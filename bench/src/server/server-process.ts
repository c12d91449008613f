/**
 * A server the benchmark starts in its own process (heapless serve, redis-server, the bare fastify route): spawned
 * with its output kept (the last few KiB, for error messages), ready once its port accepts connections, stopped
 * with SIGTERM and, if it does not exit in time, SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { LOOPBACK } from './free-port.js';

/** Output kept per process: enough for a stack trace or redis-server's startup complaint. */
const OUTPUT_TAIL_BYTES = 8192;
/** Pause between two connection attempts while waiting for a server to listen. */
const POLL_MS = 50;
/** How long a stopped server may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 10_000;

/** What to run and how long it may take to start listening. */
export interface ServerCommand {
  /** Name in messages, e.g. `heapless serve`. */
  readonly name: string;
  readonly file: string;
  readonly args: readonly string[];
  readonly port: number;
  /** Upper bound on the time until the port accepts connections (a heapless server loads its data first). */
  readonly readyTimeoutMs: number;
}

/** One running server process. Create with {@link startServer}; the owner must call {@link stop}. */
export class ServerProcess {
  private output = '';
  private readonly exited: Promise<void>;
  private exitStatus: string | undefined;

  constructor(
    readonly command: ServerCommand,
    private readonly child: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitStatus = signal === null ? `exit code ${code}` : `signal ${signal}`;
        resolve();
      });
      child.once('error', (error) => {
        this.exitStatus = error.message;
        resolve();
      });
    });
  }

  /** The process id (undefined if spawning failed). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True while the process has not exited. */
  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** The end of what the process printed, for error messages. */
  get outputTail(): string {
    return this.output.trim();
  }

  /** Resolves once the port accepts a connection; rejects if the process exits first or the timeout passes. */
  async waitUntilListening(): Promise<void> {
    const deadline = performance.now() + this.command.readyTimeoutMs;
    while (performance.now() < deadline) {
      if (!this.running) throw this.failure(`exited (${this.exitStatus}) before listening`);
      if (await accepts(this.command.port)) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw this.failure(`did not listen on port ${this.command.port} within ${this.command.readyTimeoutMs} ms`);
  }

  /** Sends SIGTERM, waits up to 10 s for the exit, then SIGKILL. Idempotent; never rejects. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), STOP_GRACE_MS);
    });
    const outcome = await Promise.race([this.exited, grace]);
    clearTimeout(timer);
    if (outcome === 'timeout' && this.running) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** Kills the process at once (SIGKILL), synchronously: for signal and exit handlers, which cannot wait. */
  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  private failure(what: string): Error {
    const tail = this.outputTail;
    return new Error(`${this.command.name} ${what}${tail === '' ? '' : `; its output:\n${tail}`}`);
  }
}

/** Spawns `command` (stdin closed, output captured). Call `waitUntilListening()` next, and `stop()` in any case. */
export function spawnServer(command: ServerCommand): ServerProcess {
  const child = spawn(command.file, [...command.args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new ServerProcess(command, child);
}

/** One connection attempt to the loopback port: true if it was accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: LOOPBACK, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
