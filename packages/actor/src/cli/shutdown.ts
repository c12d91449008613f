import type { FastifyBaseLogger } from 'fastify';

/** After a graceful shutdown, how long the process may take to exit by itself before it is told to. */
const EXIT_GRACE_MS = 5000;

/**
 * On the first SIGINT or SIGTERM, runs `shutdown` (stop accepting, finish calls in flight, close everything) and lets
 * the process end by itself; if a handle is still open `EXIT_GRACE_MS` later, logs it and exits. A second signal
 * exits at once with status 1. Returns a function that removes the handlers.
 */
export function onShutdownSignals(shutdown: () => Promise<void>, log: FastifyBaseLogger): () => void {
  let shuttingDown = false;
  const handler = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    shuttingDown = true;
    log.info({ signal }, 'shutting down: finishing calls in flight');
    shutdown().then(
      () => {
        log.info('stopped');
        remove();
        setTimeout(() => {
          log.warn({ handles: process.getActiveResourcesInfo() }, 'still running after shutdown: exiting');
          process.exit(0);
        }, EXIT_GRACE_MS).unref();
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // Kept registered during the shutdown so that a second signal is seen.
  const remove = () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return remove;
}
