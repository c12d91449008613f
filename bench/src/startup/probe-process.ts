/**
 * Forks one probe process and waits for its samples. The probe is killed if it outlives its time limit, and if
 * this process is told to stop (SIGTERM from the orchestrator on Ctrl-C, SIGINT) or exits, so no probe outlives
 * the run.
 */
import { fork } from 'node:child_process';
import type { Sample } from '../harness/benchmark.js';
import { profileFlags } from '../harness/profile-flags.js';
import type { ProbeMessage } from './probe-messages.js';

const PROBE = new URL('./probe.js', import.meta.url);
/** Enough heap for a `Map` of 5M+ decoded listings (gc-pressure's limit). */
const PROBE_EXEC_ARGV = ['--expose-gc', '--max-old-space-size=12288'];

/** Runs the probe of `system` on `dir`; resolves with its samples, rejects with its error or exit status. */
export function runProbe(system: string, dir: string, records: number, timeoutMs: number): Promise<Sample[]> {
  return new Promise((resolve, reject) => {
    const child = fork(PROBE, [system, dir, String(records)], {
      execArgv: [...PROBE_EXEC_ARGV, ...profileFlags()],
      stdio: ['ignore', 2, 2, 'ipc'],
    });
    let message: ProbeMessage | undefined;
    const kill = () => child.kill('SIGKILL');
    const onSignal = (signal: NodeJS.Signals) => {
      kill();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    };
    const timer = setTimeout(kill, timeoutMs);
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    process.once('exit', kill);
    child.on('message', (m: ProbeMessage) => {
      message = m;
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('exit', kill);
      if (message?.kind === 'samples') resolve(message.samples);
      else if (message?.kind === 'failed') reject(new Error(`${system} probe failed:\n${message.message}`));
      else
        reject(
          new Error(`${system} probe ended without a result (code ${code}, signal ${signal}; limit ${timeoutMs} ms)`),
        );
    });
  });
}
