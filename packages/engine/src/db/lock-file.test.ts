import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LockFile } from './lock-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('lock file', () => {
  it('refuses a second lock in this process, naming the directory, until released', () => {
    const lock = LockFile.acquire(dir);
    expect(readFileSync(join(dir, 'LOCK'), 'utf8')).toBe(String(process.pid));
    expect(() => LockFile.acquire(dir)).toThrow(expect.objectContaining({ code: 'HEAPLESS_ERR_LOCKED' }));
    expect(() => LockFile.acquire(dir)).toThrow(dir);
    lock.release();
    lock.release();
    LockFile.acquire(dir).release();
  });

  it('refuses a lock another live process holds, and takes it over once that process is killed', async () => {
    const moduleUrl = new URL('../../dist/db/lock-file.js', import.meta.url).href;
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { LockFile } = await import(${JSON.stringify(moduleUrl)}); LockFile.acquire(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    expect(() => LockFile.acquire(dir)).toThrow(`locked by process ${child.pid}`);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const lock = LockFile.acquire(dir); // stale: its owner is dead
    lock.release();
  });

  it('treats a garbage lock file as stale', () => {
    writeFileSync(join(dir, 'LOCK'), 'not a pid');
    LockFile.acquire(dir).release();
  });
});
