#!/usr/bin/env node
// The `heapless` command. Usage: heapless serve [--data DIR] [--memory] [--host] [--port] [--token] [--sync]
import { readFileSync } from 'node:fs';
import { parseCli, USAGE } from './cli/cli-args.js';
import { serve } from './cli/serve.js';
import { onShutdownSignals } from './cli/shutdown.js';
import { ActorError } from './errors.js';

async function main(): Promise<void> {
  const args = parseCli(process.argv.slice(2), process.env);
  if (args.command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (args.command === 'version') {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return;
  }
  const server = await serve(args);
  if (!args.memory && server.startup.native !== null) {
    server.log.warn({ native: server.startup.native }, 'native helper not in use: map images load with plain reads');
  }
  server.log.info(
    { url: server.url, http: server.httpUrl, data: args.memory ? null : args.data, sync: args.sync, ...server.startup },
    'listening',
  );
  onShutdownSignals(() => server.close(), server.log);
}

main().catch((e: unknown) => {
  if (e instanceof ActorError && e.code === 'HEAPLESS_ERR_USAGE') {
    process.stderr.write(`heapless: ${e.message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`heapless: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
