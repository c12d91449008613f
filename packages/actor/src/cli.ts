#!/usr/bin/env node
// The `heapless` command. Usage: heapless serve [options] | heapless engine stats|dump|verify|compact|repair|checkpoint DIR
// | heapless checkpoint publish --data DIR --nats URL --bucket B
//
// Only the argument parsers load up front: each command imports what it runs (the server, the engine, the NATS
// client) when it is the one asked for, so that `--version`, `--help` and the engine tools start without loading
// the server's dependencies.
import { readFileSync } from 'node:fs';
import { parseCli, USAGE } from './cli/cli-args.js';
import { ENGINE_USAGE, parseEngineArgs } from './cli/engine-args.js';
import { ActorError } from './errors.js';

/**
 * Where the usage of the failing command line is: a bad command line prints its error and this one line, not the
 * whole usage, which would push the error off the screen.
 */
let usageHint = 'heapless --help lists the commands and the options of serve';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'engine') {
    usageHint = 'heapless engine --help lists its commands and options';
    if (argv.includes('--help') || argv.includes('-h') || argv.length === 1) {
      process.stdout.write(ENGINE_USAGE);
      return;
    }
    const engineArgs = parseEngineArgs(argv.slice(1), process.stderr.isTTY === true);
    const { runEngineCommand } = await import('./cli/engine-command.js');
    process.exitCode = await runEngineCommand(engineArgs, {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
    return;
  }
  if (argv[0] === 'checkpoint') {
    const { CHECKPOINT_USAGE, parseCheckpointArgs, runCheckpointCommand } = await import('./cli/checkpoint-command.js');
    usageHint = 'heapless checkpoint --help lists its options';
    if (argv.includes('--help') || argv.includes('-h') || argv.length === 1) {
      process.stdout.write(CHECKPOINT_USAGE);
      return;
    }
    await runCheckpointCommand(parseCheckpointArgs(argv.slice(1)), (text) => process.stdout.write(text));
    return;
  }
  const args = parseCli(argv, process.env);
  if (args.command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (args.command === 'version') {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return;
  }
  const [{ serve }, { onShutdownSignals }] = await Promise.all([import('./cli/serve.js'), import('./cli/shutdown.js')]);
  const server = await serve(args);
  if (!args.memory && server.startup.native !== null) {
    server.log.warn({ native: server.startup.native }, 'native helper not in use: map images load with plain reads');
  }
  server.log.info(
    {
      url: server.url,
      http: server.httpUrl,
      tcp: server.tcpUrl,
      data: args.memory ? null : args.data,
      sync: args.sync,
      ...server.startup,
    },
    'listening',
  );
  onShutdownSignals(() => server.close(), server.log);
}

main().catch((e: unknown) => {
  if (e instanceof ActorError && e.code === 'HEAPLESS_ERR_ACTOR_USAGE') {
    process.stderr.write(`heapless: ${e.message}\n${usageHint}\n`);
    process.exitCode = 2;
    return;
  }
  // The stable code first (HEAPLESS_ERR_ENGINE_LOCKED, HEAPLESS_ERR_ENGINE_CORRUPTION...), for scripts that match on it.
  const code = (e as { code?: unknown } | null)?.code;
  const prefix = typeof code === 'string' && code.startsWith('HEAPLESS_ERR_') ? `${code}: ` : '';
  process.stderr.write(`heapless: ${prefix}${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
