import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LogReader } from './log-reader.js';
import { LogWriter } from './log-writer.js';
import { WalWriter } from './wal-writer.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-wal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const rec = (s: string) => new TextEncoder().encode(s);

function readBack(path: string): string[] {
  const r = new LogReader(path);
  const out: string[] = [];
  for (let x = r.readRecord(); x; x = r.readRecord()) out.push(Buffer.from(x).toString());
  return out;
}

describe('WAL writer (group commit)', () => {
  it('buffers appends and writes them once per event-loop turn', async () => {
    const errors: Error[] = [];
    const wal = new WalWriter(join(dir, '000001.log'), 1, (e) => errors.push(e));
    wal.append(rec('a'), 0, 1);
    wal.append(rec('b'), 0, 1);
    expect(readFileSync(wal.path).length).toBe(0); // nothing reached the file yet
    await new Promise((r) => setImmediate(r));
    expect(readBack(wal.path)).toEqual(['a', 'b']);
    await wal.close();
    expect(errors).toEqual([]);
  });

  it('resolves sync waiters only after their bytes are written and synced; concurrent ones share a round', async () => {
    const wal = new WalWriter(join(dir, '000002.log'), 2, () => {});
    const done: number[] = [];
    const ps = [0, 1, 2].map((i) => {
      wal.append(rec(`r${i}`), 0, 2);
      return wal.waitForSync().then(() => {
        done.push(i);
        // Everything appended before the waiter was registered is in the file when it resolves.
        expect(readBack(wal.path).length).toBeGreaterThanOrEqual(i + 1);
      });
    });
    await Promise.all(ps);
    expect(done).toEqual([0, 1, 2]);
    wal.append(rec('late'), 0, 4);
    await wal.waitForSync();
    expect(readBack(wal.path)).toEqual(['r0', 'r1', 'r2', 'late']);
    await wal.close();
    await wal.close(); // idempotent
  });

  it('writes at once when a burst fills the buffer, before the turn ends', () => {
    const wal = new WalWriter(join(dir, '000003.log'), 3, () => {});
    const big = new Uint8Array(100_000);
    for (let i = 0; i < 12; i++) wal.append(big, 0, big.length);
    expect(readFileSync(wal.path).length).toBeGreaterThan(1_000_000);
    return wal.close();
  });

  it('syncs at close only a log that received bytes', async () => {
    const sync = vi.spyOn(LogWriter.prototype, 'sync');
    try {
      const empty = new WalWriter(join(dir, '000006.log'), 6, () => {});
      await empty.close();
      expect(sync).not.toHaveBeenCalled();
      const used = new WalWriter(join(dir, '000007.log'), 7, () => {});
      used.append(rec('x'), 0, 1);
      await used.close();
      expect(sync).toHaveBeenCalledTimes(1);
      expect(readBack(used.path)).toEqual(['x']);
    } finally {
      sync.mockRestore();
    }
  });

  it('makes the next log wait for the previous one to be durable', async () => {
    const first = new WalWriter(join(dir, '000004.log'), 4, () => {});
    first.append(rec('old'), 0, 3);
    const order: string[] = [];
    const closed = first.close().then(() => {
      order.push('first closed');
    });
    const second = new WalWriter(join(dir, '000005.log'), 5, () => {}, closed);
    second.append(rec('new'), 0, 3);
    await second.waitForSync().then(() => order.push('second synced'));
    expect(order).toEqual(['first closed', 'second synced']);
    await second.close();
  });
});
