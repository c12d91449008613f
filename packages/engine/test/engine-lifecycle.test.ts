// Open, write, wait a random while, close, over and over: close never aborts the process, whatever moment of the
// worker threads' start it lands in (it used to die with V8's `FATAL ERROR: v8::Module::IsGraphAsync` when a thread
// was terminated while loading its module). The cycles run in child processes, since such an abort cannot be
// caught; HEAPLESS_LIFECYCLE_CYCLES sets how many (default 300, split over three children run side by side).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CYCLES = Number(process.env.HEAPLESS_LIFECYCLE_CYCLES ?? 300);
const CHILDREN = 3;
const CHILD = fileURLToPath(new URL('./engine-lifecycle-child.mjs', import.meta.url));

function runChild(
  dir: string,
  cycles: number,
  seed: number,
): Promise<{ code: number | null; signal: string | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, dir, String(cycles), String(seed)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('exit', (code, signal) => resolve({ code, signal, output }));
  });
}

describe('engine open/write/close cycles', () => {
  it(`never abort the process over ${CYCLES} cycles with random waits`, async () => {
    const root = mkdtempSync(join(tmpdir(), 'heapless-lifecycle-'));
    try {
      const per = Math.ceil(CYCLES / CHILDREN);
      const runs = await Promise.all(
        Array.from({ length: CHILDREN }, (_, k) => runChild(join(root, `db${k}`), per, 1000 + k)),
      );
      for (const r of runs) {
        expect({ code: r.code, signal: r.signal, output: r.output.trim() }).toEqual({
          code: 0,
          signal: null,
          output: `done ${per}`,
        });
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 300_000);
});
