#!/usr/bin/env node
// `pnpm heapless <command> [flags]` from the repository root: brings the build up to date (tsc -b is incremental, a
// second or two when nothing changed; the optional native helper of @heapless/offheap), with the build's output on
// stderr so that stdout carries only the command's (`--json` stays parseable), then runs packages/actor's `heapless`
// with the arguments given, and exits with its status.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const quiet = { cwd: root, stdio: ['ignore', 2, 2] };
for (const [cmd, args] of [
  [process.execPath, ['node_modules/typescript/bin/tsc', '-b']],
  [process.execPath, ['packages/offheap/scripts/build-native.mjs']],
]) {
  const r = spawnSync(cmd, args, quiet);
  if (r.status !== 0) {
    process.stderr.write(`heapless: the build failed (${args.join(' ')}); see above\n`);
    process.exit(r.status ?? 1);
  }
}
const child = spawn(process.execPath, [`${root}packages/actor/dist/cli.js`, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// A terminal's Ctrl-C reaches the whole process group, the command included: this wrapper only waits for it. A
// SIGTERM or SIGHUP sent to the wrapper alone (a supervisor's) is passed on.
process.on('SIGINT', () => {});
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
