/**
 * A free TCP port on the loopback interface, for servers that must be told their port up front (redis-server has no
 * "pick one" option; `--port 0` disables TCP there).
 */
import { createServer } from 'node:net';

/** The loopback address every server of the benchmark listens on: no traffic leaves the machine. */
export const LOOPBACK = '127.0.0.1';

/**
 * Binds port 0 on {@link LOOPBACK}, reads the port the kernel chose and releases it. Another process could take the
 * port between this call and the server's bind; the server then fails to start, which is reported, not hidden.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port was assigned'))));
    });
  });
}
