// `heapless serve` as a child process, for the tests that need the real command: real flags, signals, sockets, RSS.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';

/** The built `heapless` command. */
export const cli = createRequire(import.meta.url)
  .resolve('@heapless/actor/package.json')
  .replace(/package\.json$/, 'dist/cli.js');

export interface Child {
  proc: ChildProcess;
  url: string;
  httpUrl: string;
  /** Every log line so far, parsed. */
  lines: Record<string, unknown>[];
  exited: Promise<number | null>;
}

/**
 * Starts `heapless serve --port 0 ...args` with `env` added to this process's environment and resolves once it logs
 * that it listens; rejects with its stderr if it exits first. The caller kills it.
 */
export function startServe(args: string[], env: Record<string, string> = {}): Promise<Child> {
  const proc = spawn(process.execPath, [cli, 'serve', '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl = buf.indexOf('\n');
      for (; nl >= 0; nl = buf.indexOf('\n')) {
        const line = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
        buf = buf.slice(nl + 1);
        lines.push(line);
        if (line.msg === 'listening')
          resolve({ proc, url: line.url as string, httpUrl: line.http as string, lines, exited });
      }
    });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    void exited.then((code) => reject(new Error(`heapless serve exited with ${code}: ${err}`)));
  });
}

/** The value of an unlabelled or labelled sample in Prometheus text, e.g. `heapless_memory_bytes{kind="rss"}`. */
export function sample(metrics: string, name: string): number {
  const i = metrics.indexOf(`\n${name} `);
  if (i < 0) throw new Error(`no sample ${name}`);
  return Number(metrics.slice(i + name.length + 2, metrics.indexOf('\n', i + 1)));
}
