// Crash test: a child process writes, tells this process which writes were acknowledged, and is killed with SIGKILL
// at random moments; the engine then reopens. With sync and without, every write the child saw acknowledged is there
// (a write without sync has been handed to the OS when its promise resolves, which a killed process cannot undo), and
// what is there is a prefix of the write order. HEAPLESS_CRASH_CYCLES sets the number of kills without sync (default
// 30); the sync run, whose acknowledgement waits for an fdatasync and so was never the weak point, does two thirds.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '@heapless/engine';
import { describe, expect, it } from 'vitest';

const CYCLES = Number(process.env.HEAPLESS_CRASH_CYCLES ?? 30);
const SYNC_CYCLES = Math.ceil((CYCLES * 2) / 3);
const CHILD = fileURLToPath(new URL('./engine-crash-child.mjs', import.meta.url));
const dec = new TextDecoder();
const value = (i: number) => `v${i}-${'x'.repeat(i % 97)}`;

/** A small deterministic generator, so that a failing run can be replayed from its seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

interface ChildRun {
  /** Keys the child found at open: k0..k(recovered-1), checked by the child (values and prefix). */
  recovered: number;
  /** Highest index acknowledged before the kill (recovered - 1 if none). */
  acked: number;
}

/**
 * Runs the child until it has acknowledged `killAfter` writes, then SIGKILLs it. The child first checks and reports
 * what the previous run left (a prefix k0..k(n-1) with the right values).
 */
function runChild(dir: string, mode: 'sync' | 'nosync', killAfter: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let recovered = -1;
    let acked = -1;
    let count = 0;
    let buffered = '';
    let output = '';
    let killed = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('recovered ')) {
          recovered = Number(line.slice(10));
          acked = recovered - 1;
        } else if (line.startsWith('ack ')) {
          acked = Math.max(acked, Number(line.slice(4)));
          if (++count >= killAfter && !killed) {
            killed = true;
            child.kill('SIGKILL');
          }
        } else {
          output += `${line}\n`;
        }
      }
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' && recovered >= 0) resolve({ recovered, acked });
      else reject(new Error(`child exited with ${code ?? signal}: ${output}`));
    });
  });
}

/** Opens the database in this process and returns n such that exactly k0..k(n-1) are there with the right values. */
async function verifyPrefix(dir: string, where: string): Promise<number> {
  const db = await Engine.open(dir);
  try {
    const present: number[] = [];
    for await (const [k, v] of db.iterator()) {
      const i = Number(dec.decode(k).slice(1));
      expect(dec.decode(v), `${where}: value of k${i}`).toBe(value(i));
      present.push(i);
    }
    present.sort((a, b) => a - b);
    present.forEach((i, at) => {
      if (i !== at) expect.fail(`${where}: k${at} is missing but k${present.at(-1)} is present (not a prefix)`);
    });
    return present.length;
  } finally {
    await db.close();
  }
}

describe('engine crash recovery (SIGKILL)', () => {
  it(`keeps every acknowledged sync write over ${SYNC_CYCLES} kills`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-crash-sync-'));
    const random = rng(Number(process.env.HEAPLESS_CRASH_SEED ?? 12345));
    try {
      let previous: ChildRun | undefined;
      for (let cycle = 0; cycle < SYNC_CYCLES; cycle++) {
        const run = await runChild(dir, 'sync', 1 + Math.floor(random() * 150));
        if (previous) {
          expect(run.recovered, `cycle ${cycle}: acknowledged up to k${previous.acked}`).toBeGreaterThan(
            previous.acked,
          );
        }
        previous = run;
      }
      const n = await verifyPrefix(dir, 'after the last kill');
      expect(n).toBeGreaterThan(previous!.acked);
      expect(n).toBeGreaterThan(SYNC_CYCLES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it(`keeps every acknowledged write without sync over ${CYCLES} kills`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-crash-nosync-'));
    const random = rng(Number(process.env.HEAPLESS_CRASH_SEED ?? 777));
    try {
      let previous: ChildRun | undefined;
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const run = await runChild(dir, 'nosync', 1 + Math.floor(random() * 600));
        if (previous) {
          expect(run.recovered, `cycle ${cycle}: acknowledged up to k${previous.acked}`).toBeGreaterThan(
            previous.acked,
          );
        }
        previous = run;
      }
      const n = await verifyPrefix(dir, 'after the last kill');
      expect(n).toBeGreaterThan(previous!.acked);
      expect(n).toBeGreaterThan(CYCLES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
