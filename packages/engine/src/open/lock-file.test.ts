import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../db/engine.js';
import { LockFile } from './lock-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fds = () => readdirSync('/proc/self/fd').length;

/** A child process that opens an engine on `dbDir` (built module from dist) and holds it until killed. */
async function holder(dbDir: string): Promise<ChildProcess> {
  const moduleUrl = new URL('../../dist/index.js', import.meta.url).href;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { Engine } = await import(${JSON.stringify(moduleUrl)});
       const db = await Engine.open(${JSON.stringify(dbDir)});
       await db.put('from', 'child', { sync: true });
       console.log('open');
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

async function kill9(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('directory lock', () => {
  it('refuses a second lock in this process, naming the directory and this process, until released', () => {
    const before = fds();
    const lock = LockFile.acquire(dir);
    expect(readFileSync(join(dir, 'LOCK'), 'latin1')).toBe(`${process.pid} ${hostname()}\n`);
    expect(() => LockFile.acquire(dir)).toThrow(expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' }));
    expect(() => LockFile.acquire(dir)).toThrow(`${dir} is locked by this process (pid ${process.pid})`);
    expect(fds()).toBe(before + 1); // the refused attempts closed what they opened
    lock.release();
    lock.release();
    expect(fds()).toBe(before);
    expect(readdirSync(dir)).toContain('LOCK'); // never deleted: see lock-file.ts
    LockFile.acquire(dir).release();
    expect(fds()).toBe(before);
  });

  it('ignores what LOCK holds: a pid of this very process, or garbage, is no lock', () => {
    writeFileSync(join(dir, 'LOCK'), `${process.pid} ${hostname()}\n`);
    LockFile.acquire(dir).release();
    writeFileSync(join(dir, 'LOCK'), 'not a pid');
    LockFile.acquire(dir).release();
  });

  it('refuses an engine another process holds, naming its pid and host, and is free once that process is killed -9', async () => {
    const child = await holder(dir);
    try {
      await expect(Engine.open(dir)).rejects.toMatchObject({
        code: 'HEAPLESS_ERR_ENGINE_LOCKED',
        message: expect.stringContaining(`locked by pid ${child.pid} on host ${hostname()}`),
      });
      expect(() => LockFile.acquire(dir)).toThrow(expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' }));
    } finally {
      await kill9(child);
    }
    // The kernel released the lock with the process: no stale-lock detection is involved.
    const db = await Engine.open(dir);
    expect(db.getSync('from')).toEqual(new TextEncoder().encode('child'));
    await db.close();
  });

  it('opens a cp -r copy of a live directory (the copy carries LOCK but not the lock) while the original stays locked', async () => {
    const child = await holder(dir);
    const copy = `${dir}-copy`;
    try {
      cpSync(dir, copy, { recursive: true });
      expect(readFileSync(join(copy, 'LOCK'), 'latin1')).toBe(`${child.pid} ${hostname()}\n`);
      const db = await Engine.open(copy);
      expect(db.getSync('from')).toEqual(new TextEncoder().encode('child'));
      await expect(Engine.open(copy)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
      await db.close();
      await expect(Engine.open(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
    } finally {
      await kill9(child);
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('a second Engine.open in the same process is LOCKED, and close releases the lock', async () => {
    const db = await Engine.open(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_LOCKED' });
    await db.close();
    const again = await Engine.open(dir);
    await again.close();
  });
});
