// The copies of a data directory that `heapless checkpoint publish` leaves when it is killed are removed by the next
// run, and only those: a live publisher's copy, another host's and a copy too young to have its owner file stay.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COPY_OWNER_FILE, makePublishCopy, removeAbandonedCopies } from './publish-copy.js';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'heapless-publish-copy-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function copyOwnedBy(name: string, owner: unknown): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'table.sst'), 'bytes');
  if (owner !== undefined) writeFileSync(join(dir, COPY_OWNER_FILE), JSON.stringify(owner));
  return dir;
}

describe('publish copies', () => {
  it('a copy names its owner, this process', async () => {
    const copy = await makePublishCopy(join(work, 'data'));
    expect(copy.startsWith(join(work, 'data.publish-'))).toBe(true);
    expect(JSON.parse(readFileSync(join(copy, COPY_OWNER_FILE), 'utf8'))).toEqual({
      host: hostname(),
      pid: process.pid,
    });
  });

  it('removes the copies of dead processes of this host, and leaves every other', async () => {
    const data = join(work, 'data');
    const dead = copyOwnedBy('data.publish-dead01', { host: hostname(), pid: deadPid() });
    const live = copyOwnedBy('data.publish-live01', { host: hostname(), pid: process.pid });
    const elsewhere = copyOwnedBy('data.publish-else01', { host: `${hostname()}-other`, pid: deadPid() });
    const young = copyOwnedBy('data.publish-young1', undefined);
    const old = copyOwnedBy('data.publish-old001', undefined);
    const past = new Date(Date.now() - 10 * 60_000);
    utimesSync(old, past, past);
    const garbled = copyOwnedBy('data.publish-garb01', undefined);
    writeFileSync(join(garbled, COPY_OWNER_FILE), '');
    const oldGarbled = copyOwnedBy('data.publish-garb02', undefined);
    writeFileSync(join(oldGarbled, COPY_OWNER_FILE), '{not json');
    utimesSync(oldGarbled, past, past);
    const otherData = copyOwnedBy('data2.publish-dead02', { host: hostname(), pid: deadPid() });

    expect((await removeAbandonedCopies(data)).sort()).toEqual([dead, old, oldGarbled].sort());
    for (const kept of [live, elsewhere, young, garbled, otherData]) expect(existsSync(kept)).toBe(true);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(oldGarbled)).toBe(false);
  });

  it('a directory whose parent does not exist has nothing to remove', async () => {
    expect(await removeAbandonedCopies(join(work, 'missing', 'data'))).toEqual([]);
  });
});
