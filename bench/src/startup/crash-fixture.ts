/**
 * The state a crash leaves (system `offheap-crash`): the writer (crash-writer.ts) runs on the fixture and is killed
 * with SIGKILL once its last writes are in the WAL.
 */
import { fork } from 'node:child_process';

const WRITER = new URL('./crash-writer.js', import.meta.url);

/** Runs the crash writer on `dir` and SIGKILLs it once it is ready; resolves when it is dead. */
export function crashFixture(dir: string, records: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(WRITER, [dir, String(records)], { stdio: ['ignore', 2, 2, 'ipc'] });
    let failure: string | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('message', (m: { kind: string; message?: string }) => {
      if (m.kind === 'ready') child.kill('SIGKILL');
      else failure = m.message;
    });
    child.once('exit', (_code, signal) => {
      clearTimeout(timer);
      if (failure !== undefined) reject(new Error(`crash writer failed:\n${failure}`));
      else if (signal !== 'SIGKILL') reject(new Error('crash writer ended on its own'));
      else resolve();
    });
  });
}
