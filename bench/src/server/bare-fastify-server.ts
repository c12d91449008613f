/**
 * The HTTP anchor, run as its own process: a bare fastify app (no logger, no plugins) with one route,
 * `GET /v1/kv/:key`, that answers every key with the same 100-byte value as `application/octet-stream`. It is the
 * least an HTTP key-value read can cost on fastify, so heapless's route is measured against it.
 *
 * Usage: `node bare-fastify-server.js <port>`; listens on 127.0.0.1 and closes on SIGTERM or SIGINT.
 */
import Fastify from 'fastify';
import { hundredByteValue } from './cases.js';
import { LOOPBACK } from './free-port.js';

async function main(portText: string | undefined): Promise<void> {
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`usage: bare-fastify-server.js <port>`);
  const value = hundredByteValue();
  const app = Fastify({ logger: false });
  app.get('/v1/kv/:key', (_request, reply) => {
    reply.type('application/octet-stream').send(value);
  });
  const close = () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
  await app.listen({ host: LOOPBACK, port });
}

main(process.argv[2]).catch((error: unknown) => {
  process.stderr.write(`bare-fastify-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
