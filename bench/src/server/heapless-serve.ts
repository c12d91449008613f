/**
 * Starting a real `heapless serve` child process (the workspace's @heapless/actor dist/cli.js) on a free loopback
 * port, owned by a {@link ProcessGroup}: what the server, batch, watch and replica benchmarks each need.
 */
import { profileFlags } from '../harness/profile-flags.js';
import { freePort, LOOPBACK } from './free-port.js';
import type { ProcessGroup } from './process-group.js';
import type { ServerProcess } from './server-process.js';

/** A started server and where it listens. */
export interface HeaplessServe {
  readonly server: ServerProcess;
  readonly port: number;
  /** Its WebSocket endpoint. */
  readonly url: string;
}

/**
 * Starts `heapless serve --data dataDir` with `flags` and resolves once it listens (within `readyTimeoutMs`: a
 * server loads its data before it listens). The group stops it on every path.
 */
export async function startHeaplessServe(
  group: ProcessGroup,
  dataDir: string,
  options: { flags?: readonly string[]; readyTimeoutMs: number; name?: string },
): Promise<HeaplessServe> {
  const port = await freePort();
  const cli = new URL('./cli.js', import.meta.resolve('@heapless/actor')).pathname;
  const server = await group.start({
    name: options.name ?? 'heapless serve',
    file: process.execPath,
    args: [
      ...profileFlags(),
      cli,
      'serve',
      '--data',
      dataDir,
      '--host',
      LOOPBACK,
      '--port',
      String(port),
      ...(options.flags ?? []),
    ],
    port,
    readyTimeoutMs: options.readyTimeoutMs,
  });
  return { server, port, url: `ws://${LOOPBACK}:${port}/v1/ws` };
}
