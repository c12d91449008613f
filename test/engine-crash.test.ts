// Crash test: a child process writes and is killed with SIGKILL at random moments; the engine then reopens.
// - with sync: every write the child saw acknowledged is there, and what is there is a prefix of the write order;
// - without sync: what is there is a prefix of the write order (a crash loses a suffix, never a write in the middle).
// HEAPLESS_CRASH_CYCLES sets the number of kills (default 20; the non-sync variant runs a quarter as many).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '@heapless/engine';
import { describe, expect, it } from 'vitest';

const CYCLES = Number(process.env.HEAPLESS_CRASH_CYCLES ?? 20);
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

/** Runs the child until it has acknowledged `killAfter` writes, then SIGKILLs it. Returns the highest acked index. */
function runChild(dir: string, mode: 'sync' | 'nosync', start: number, killAfter: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir, mode, String(start)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let acked = start - 1;
    let count = 0;
    let buffered = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('ack ')) continue;
        acked = Math.max(acked, Number(line.slice(4)));
        if (++count >= killAfter && !killed) {
          killed = true;
          child.kill('SIGKILL');
        }
      }
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(acked);
      else reject(new Error(`child exited with ${code}: ${stderr}`));
    });
  });
}

/** Reopens the database and returns n such that exactly k0..k(n-1) are present with the right values. */
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
  it(`keeps every acknowledged sync write over ${CYCLES} kills`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-crash-sync-'));
    const random = rng(Number(process.env.HEAPLESS_CRASH_SEED ?? 12345));
    try {
      let next = 0;
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const killAfter = 1 + Math.floor(random() * 200);
        const acked = await runChild(dir, 'sync', next, killAfter);
        const n = await verifyPrefix(dir, `cycle ${cycle}`);
        expect(n, `cycle ${cycle}: acknowledged up to k${acked}, recovered ${n} keys`).toBeGreaterThan(acked);
        next = n;
      }
      expect(next).toBeGreaterThan(CYCLES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it(`recovers a prefix of the write order without sync over ${Math.ceil(CYCLES / 4)} kills`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-crash-nosync-'));
    const random = rng(Number(process.env.HEAPLESS_CRASH_SEED ?? 777));
    try {
      let next = 0;
      for (let cycle = 0; cycle < Math.ceil(CYCLES / 4); cycle++) {
        const killAfter = 1 + Math.floor(random() * 1500);
        await runChild(dir, 'nosync', next, killAfter);
        const n = await verifyPrefix(dir, `cycle ${cycle}`);
        expect(n).toBeGreaterThanOrEqual(next);
        next = n;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
