// One way for the kill -9 suites to run a child and kill it mid-stream: the child prints a line per acknowledged
// step, the suite decides after which line to SIGKILL it.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Runs `node file ...args`, hands each line the child prints on stdout to `onLine`, and SIGKILLs the child as soon
 * as `onLine` returns true. Resolves once the child has died of that SIGKILL; rejects, with the child's stderr, if it
 * exited by itself first (a child that crashes must not pass as a killed one).
 */
export function runUntilKilled(
  file: string,
  args: readonly string[],
  onLine: (line: string) => boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (onLine(line) && child.exitCode === null) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited on its own: ${stderr}`));
      else resolve();
    });
  });
}
