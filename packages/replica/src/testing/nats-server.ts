/**
 * Real nats-server processes for the tests: a single JetStream server, or a JetStream cluster of three on loopback
 * (streams with 3 replicas). Each node gets free loopback ports (client, monitoring, cluster routes), its own store
 * directory and its own config file under one temporary directory; nothing is a system-wide service, and nothing
 * listens beyond 127.0.0.1.
 *
 * ```ts
 * const nats = await startNatsServer();          // or startNatsCluster(3)
 * const nc = await connect({ servers: nats.urls });
 * await nats.nodes[0].kill();                     // SIGKILL, waits for the exit
 * await nats.nodes[0].start();                    // same ports, same store, waits until healthy
 * await nats.close();                             // every process ended, the directory removed
 * ```
 *
 * The binary is Debian's `nats-server` (scripts/system-deps.mjs installs it). Ready means the monitoring endpoint
 * `/healthz` answers 200: with `?js-enabled-only=true` for a single server; in full for a cluster node, which also
 * requires contact with the JetStream meta leader and its streams being current, so a restarted node is ready once
 * it has caught up; a new cluster is ready once every node also sees all its peers in the meta group (`/jsz`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const LOOPBACK = '127.0.0.1';
/** Where Debian puts the binary (in `/usr/sbin`, which a non-root PATH may lack). */
const DEBIAN_BINARY = '/usr/sbin/nats-server';
/** Output kept per process, for the message of a node that failed to start. */
const OUTPUT_TAIL_BYTES = 8192;
/** Pause between two health probes. */
const POLL_MS = 50;
/** Upper bound on a node's start (a cluster node restarted after a kill also catches its streams up). */
const READY_TIMEOUT_MS = 30_000;
/** How long a node may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 10_000;
/** The cluster's name in every node's config; JetStream clustering requires one. */
const CLUSTER_NAME = 'heapless-test';

/** The nats-server binary: the first `nats-server` on PATH, else Debian's; throws when neither exists. */
export function natsServerBinary(): string {
  const candidates = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, 'nats-server'));
  for (const file of [...candidates, DEBIAN_BINARY]) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  throw new Error('nats-server not found: run `node scripts/system-deps.mjs` (apt-get install -y nats-server)');
}

/** The ports one node listens on, all on loopback. */
interface NodePorts {
  readonly client: number;
  readonly monitor: number;
  /** The cluster route port; undefined for a single server. */
  readonly cluster: number | undefined;
}

/** One nats-server process of a {@link NatsServers}; it can be stopped, killed and started again on the same ports. */
export class NatsNode {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private output = '';

  constructor(
    /** The node's `server_name`, e.g. `n1`. */
    readonly name: string,
    private readonly ports: NodePorts,
    /** The node's directory: its config file and its JetStream store. */
    readonly dir: string,
    private readonly configFile: string,
    private readonly binary: string,
    /** Whether readiness includes contact with the JetStream meta leader (cluster nodes). */
    private readonly clustered: boolean,
  ) {}

  /** The client URL, `nats://127.0.0.1:PORT`. */
  get url(): string {
    return `nats://${LOOPBACK}:${this.ports.client}`;
  }

  /** The client port. */
  get port(): number {
    return this.ports.client;
  }

  /** The monitoring (HTTP) port. */
  get monitorPort(): number {
    return this.ports.monitor;
  }

  /** The process id while the process runs, else undefined. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** True from spawn until the process has exited. */
  get running(): boolean {
    return this.child !== undefined;
  }

  /** The end of what the process printed (its log), for messages. */
  get outputTail(): string {
    return this.output.trim();
  }

  /**
   * Spawns the process (if it is not running) and resolves once it is healthy; rejects, with the end of its log,
   * when it exits first or is not healthy within 30 s (the process is then killed).
   */
  async start(): Promise<void> {
    if (this.child === undefined) this.spawn();
    try {
      await this.waitHealthy();
    } catch (error) {
      await this.kill();
      throw error;
    }
  }

  /** SIGTERM (a clean shutdown), SIGKILL after 10 s; resolves once the process has exited. Never rejects. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), STOP_GRACE_MS);
    });
    const outcome = await Promise.race([this.exited, grace]);
    clearTimeout(timer);
    if (outcome === 'timeout') await this.kill();
  }

  /** SIGKILL (as a crash); resolves once the process has exited. Never rejects. */
  async kill(): Promise<void> {
    if (this.child === undefined) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Stops the process cleanly and starts it again on the same ports and store. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Resolves once this node's JetStream meta group (monitoring `/jsz`) has a leader and `size` peers. */
  async waitForPeers(size: number): Promise<void> {
    const url = `http://${LOOPBACK}:${this.ports.monitor}/jsz`;
    const deadline = performance.now() + READY_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (this.child === undefined) throw this.failure('exited before the cluster formed');
      const meta = await metaGroup(url);
      if (meta?.leader !== undefined && meta.leader !== '' && meta.cluster_size === size) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw this.failure(`did not see ${size} JetStream peers within ${READY_TIMEOUT_MS} ms`);
  }

  /** SIGKILL without waiting, for an exit handler, which cannot wait. */
  killNow(): void {
    this.child?.kill('SIGKILL');
  }

  private spawn(): void {
    this.output = '';
    const child = spawn(this.binary, ['-c', this.configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.child = child;
    this.exited = new Promise((resolve) => {
      const done = (status: string) => {
        if (this.child === child) this.child = undefined;
        this.output += `\n[${this.name} ${status}]`;
        resolve();
      };
      child.once('exit', (code, signal) => done(signal === null ? `exit code ${code}` : `signal ${signal}`));
      child.once('error', (error) => done(error.message));
    });
  }

  private async waitHealthy(): Promise<void> {
    const query = this.clustered ? '' : '?js-enabled-only=true';
    const url = `http://${LOOPBACK}:${this.ports.monitor}/healthz${query}`;
    const deadline = performance.now() + READY_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (this.child === undefined) throw this.failure('exited before it was healthy');
      if (await answersOk(url)) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw this.failure(`was not healthy within ${READY_TIMEOUT_MS} ms`);
  }

  private failure(what: string): Error {
    return new Error(`nats-server ${this.name} ${what}; its output:\n${this.outputTail}`);
  }
}

/** Started nats-server nodes under one temporary directory. Create with {@link startNatsServer} or {@link startNatsCluster}. */
export class NatsServers {
  private readonly onExit = () => {
    for (const node of this.nodes) node.killNow();
    rmSync(this.dir, { recursive: true, force: true });
  };
  /** A test process stopped by a signal (vitest ends its workers so) takes its servers with it, then dies of it. */
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.onExit();
    this.unhook();
    process.kill(process.pid, signal);
  };

  constructor(
    /** The nodes, `n1`, `n2`, ... */
    readonly nodes: readonly NatsNode[],
    /** The temporary directory that holds every node's config and store. */
    readonly dir: string,
  ) {
    // A test process that ends without close() takes its servers with it.
    process.once('exit', this.onExit);
    process.once('SIGTERM', this.onSignal);
    process.once('SIGINT', this.onSignal);
  }

  /** Every node's client URL, for a client's `servers` option. */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** Kills every node, waits for each exit and removes the directory. Idempotent. */
  async close(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    this.unhook();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private unhook(): void {
    process.off('exit', this.onExit);
    process.off('SIGTERM', this.onSignal);
    process.off('SIGINT', this.onSignal);
  }

  /** For `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Starts one JetStream server on free loopback ports; the caller must `close()` it. */
export function startNatsServer(): Promise<NatsServers> {
  return startNodes(1, false);
}

/**
 * Starts a JetStream cluster of `size` nodes (3 by default: streams may have 3 replicas) whose routes are on
 * loopback; resolves once every node is healthy (a meta leader is elected). The caller must `close()` it.
 */
export function startNatsCluster(size = 3): Promise<NatsServers> {
  if (!Number.isInteger(size) || size < 2) throw new RangeError(`a cluster needs 2 nodes or more, not ${size}`);
  return startNodes(size, true);
}

async function startNodes(count: number, clustered: boolean): Promise<NatsServers> {
  const binary = natsServerBinary();
  const dir = mkdtempSync(join(tmpdir(), 'heapless-nats-'));
  const free = await freePorts(count * (clustered ? 3 : 2));
  const ports: NodePorts[] = [];
  for (let i = 0; i < count; i++) {
    const [client, monitor, cluster] = free.splice(0, clustered ? 3 : 2);
    ports.push({ client: client!, monitor: monitor!, cluster });
  }
  const nodes = ports.map((own, i) => {
    const name = `n${i + 1}`;
    const nodeDir = join(dir, name);
    mkdirSync(nodeDir);
    const configFile = join(nodeDir, 'nats.conf');
    const routes = ports.filter((p) => p !== own).map((p) => `nats-route://${LOOPBACK}:${p.cluster}`);
    writeFileSync(configFile, nodeConfig(name, own, join(nodeDir, 'store'), routes));
    return new NatsNode(name, own, nodeDir, configFile, binary, clustered);
  });
  const servers = new NatsServers(nodes, dir);
  try {
    // Cluster nodes start together: none is healthy before a meta leader, which needs a majority.
    await Promise.all(nodes.map((node) => node.start()));
    // A node is healthy once it knows a meta leader, maybe before it knows every peer; a stream of `count`
    // replicas needs all of them known.
    if (clustered) await Promise.all(nodes.map((node) => node.waitForPeers(count)));
  } catch (error) {
    await servers.close();
    throw error;
  }
  return servers;
}

/** A node's config file (nats-server's own format; strings are JSON strings, which it reads). */
function nodeConfig(name: string, ports: NodePorts, storeDir: string, routes: readonly string[]): string {
  const lines = [
    `server_name: ${JSON.stringify(name)}`,
    `listen: "${LOOPBACK}:${ports.client}"`,
    `http: "${LOOPBACK}:${ports.monitor}"`,
    // Fixed limits, so that a test server does not size itself from the machine's memory and disk.
    `jetstream { store_dir: ${JSON.stringify(storeDir)}, max_memory_store: 256MB, max_file_store: 8GB }`,
  ];
  if (ports.cluster !== undefined) {
    const list = routes.map((route) => JSON.stringify(route)).join(', ');
    lines.push(`cluster { name: ${CLUSTER_NAME}, listen: "${LOOPBACK}:${ports.cluster}", routes: [${list}] }`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * `count` distinct free loopback ports: each is bound to port 0 and held until all are chosen, then released.
 * Another process could take one before nats-server binds it; the start then fails with the server's message.
 */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, LOOPBACK, resolve);
      });
    }
    return servers.map((server) => {
      const address = server.address();
      if (typeof address !== 'object' || address === null) throw new Error('no port was assigned');
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** One GET: true on a 200 answer, false on any other status or a refused connection. */
async function answersOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** The JetStream meta group a node reports, or undefined when it does not answer. */
async function metaGroup(url: string): Promise<{ leader?: string; cluster_size?: number } | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { meta_cluster?: { leader?: string; cluster_size?: number } };
    return body.meta_cluster;
  } catch {
    return undefined;
  }
}
