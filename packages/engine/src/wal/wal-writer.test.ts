import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RecordReader } from '../record/record-reader.js';
import { RecordWriter } from '../record/record-writer.js';
import { batchCount, batchSequence, replayBatch, WriteBatch } from '../write/write-batch.js';
import { WalWriter } from './wal-writer.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-wal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const rec = (s: string) => new TextEncoder().encode(s);

function readBack(path: string): string[] {
  const r = new RecordReader(path);
  const out: string[] = [];
  for (let x = r.readRecord(); x; x = r.readRecord()) out.push(Buffer.from(x).toString());
  return out;
}

describe('WAL writer (group commit)', () => {
  it('buffers appends no one waits for and writes them by the end of the event-loop turn', async () => {
    const errors: Error[] = [];
    const wal = new WalWriter(new RecordWriter(join(dir, '000001.log')), 1, (e) => errors.push(e));
    wal.append(rec('a'), 0, 1);
    wal.append(rec('b'), 0, 1);
    expect(readFileSync(wal.path).length).toBe(0); // nothing reached the file yet
    await new Promise((r) => setImmediate(r));
    expect(readBack(wal.path)).toEqual(['a', 'b']);
    await wal.close();
    expect(errors).toEqual([]);
  });

  it('resolves written() only once write(2) has the bytes: one write and one promise per synchronous run', async () => {
    const wal = new WalWriter(new RecordWriter(join(dir, '000010.log')), 10, () => {});
    const write = vi.spyOn(RecordWriter.prototype, 'writePending');
    try {
      wal.append(rec('a'), 0, 1);
      const first = wal.written();
      wal.append(rec('b'), 0, 1);
      const second = wal.written();
      expect(second).toBe(first);
      expect(readFileSync(wal.path).length).toBe(0); // nothing reached the file yet
      await first;
      expect(readBack(wal.path)).toEqual(['a', 'b']);
      expect(write).toHaveBeenCalledTimes(1);
      expect(wal.written()).not.toBe(first); // nothing pending: already written
      wal.append(rec('c'), 0, 1);
      const third = wal.written();
      expect(third).not.toBe(first);
      await third;
      expect(readBack(wal.path)).toEqual(['a', 'b', 'c']);
      expect(write).toHaveBeenCalledTimes(2);
    } finally {
      write.mockRestore();
    }
    await wal.close();
  });

  it('rejects written() with the error when write(2) fails, and reports it once', async () => {
    const errors: Error[] = [];
    const wal = new WalWriter(new RecordWriter(join(dir, '000011.log')), 11, (e) => errors.push(e));
    const write = vi.spyOn(RecordWriter.prototype, 'writePending').mockImplementationOnce(() => {
      throw new Error('injected write failure');
    });
    try {
      wal.append(rec('a'), 0, 1);
      await expect(wal.written()).rejects.toThrow('injected write failure');
      await expect(wal.written()).rejects.toThrow('injected write failure');
      expect(errors.map((e) => e.message)).toEqual(['injected write failure']);
    } finally {
      write.mockRestore();
    }
    await wal.close();
  });

  it('resolves sync waiters only after their bytes are written and synced; concurrent ones share a round', async () => {
    const wal = new WalWriter(new RecordWriter(join(dir, '000002.log')), 2, () => {});
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
    const wal = new WalWriter(new RecordWriter(join(dir, '000003.log')), 3, () => {});
    const big = new Uint8Array(100_000);
    for (let i = 0; i < 12; i++) wal.append(big, 0, big.length);
    expect(readFileSync(wal.path).length).toBeGreaterThan(1_000_000);
    return wal.close();
  });

  it('syncs at close only a log that received bytes', async () => {
    const sync = vi.spyOn(RecordWriter.prototype, 'sync');
    try {
      const empty = new WalWriter(new RecordWriter(join(dir, '000006.log')), 6, () => {});
      await empty.close();
      expect(sync).not.toHaveBeenCalled();
      const used = new WalWriter(new RecordWriter(join(dir, '000007.log')), 7, () => {});
      used.append(rec('x'), 0, 1);
      await used.close();
      expect(sync).toHaveBeenCalledTimes(1);
      expect(readBack(used.path)).toEqual(['x']);
    } finally {
      sync.mockRestore();
    }
  });

  it('makes the next log write nothing before the previous one is durable', async () => {
    let previousDurable!: () => void;
    const previous = new Promise<void>((resolve) => {
      previousDurable = resolve;
    });
    const wal = new WalWriter(new RecordWriter(join(dir, '000005.log')), 5, () => {}, previous);
    const order: string[] = [];
    wal.append(rec('new'), 0, 3);
    const written = wal.written().then(() => order.push('written'));
    const synced = wal.waitForSync().then(() => order.push('synced'));
    for (let turn = 0; turn < 3; turn++) await new Promise((r) => setImmediate(r));
    expect(readFileSync(wal.path).length).toBe(0);
    expect(order).toEqual([]);
    previousDurable();
    await Promise.all([written, synced]);
    expect(order).toEqual(['written', 'synced']);
    expect(readBack(wal.path)).toEqual(['new']);
    await wal.close();
  });

  it('chains logs through close: the second writes once the first is synced and closed', async () => {
    const first = new WalWriter(new RecordWriter(join(dir, '000008.log')), 8, () => {});
    first.append(rec('old'), 0, 3);
    const order: string[] = [];
    const closed = first.close().then(() => {
      order.push('first closed');
    });
    const second = new WalWriter(new RecordWriter(join(dir, '000009.log')), 9, () => {}, closed);
    second.append(rec('new'), 0, 3);
    await second.written().then(() => order.push('second written'));
    await second.waitForSync().then(() => order.push('second synced'));
    expect(order).toEqual(['first closed', 'second written', 'second synced']);
    expect(readBack(first.path)).toEqual(['old']);
    await second.close();
  });
});

describe('WAL writer (batches merged into one record)', () => {
  const batch = (seq: number, ...keys: string[]) => {
    const b = new WriteBatch();
    for (const k of keys) b.put(k, `v-${k}`);
    b.seal(seq);
    return b;
  };
  /** Each record of the log as [first sequence, count, `seq:key=value`...]. */
  const records = (path: string) => {
    const r = new RecordReader(path);
    const out: [number, number, string[]][] = [];
    for (let x = r.readRecord(); x; x = r.readRecord()) {
      const writes: string[] = [];
      const str = (b: Uint8Array, s: number, l: number) => Buffer.from(b.subarray(s, s + l)).toString();
      replayBatch(
        x,
        x.length,
        batchSequence(x),
        {
          put: (b, ks, kl, vs, vl, seq) => writes.push(`${seq}:${str(b, ks, kl)}=${str(b, vs, vl)}`),
          del: (b, ks, kl, seq) => writes.push(`${seq}:${str(b, ks, kl)}`),
        },
        new Int32Array(1),
        path,
        0,
      );
      out.push([batchSequence(x), batchCount(x), writes]);
    }
    return out;
  };

  it('merges the batches of one run whose sequences follow on, and starts a record at a gap or after a write', async () => {
    const wal = new WalWriter(new RecordWriter(join(dir, '000001.log')), 1, () => {});
    for (const b of [batch(5, 'a'), batch(6, 'b', 'c'), batch(8, 'd'), batch(20, 'e')]) wal.append(b.rep, 0, b.length);
    const sizeBefore = wal.size;
    await wal.written();
    expect(wal.size).toBe(sizeBefore); // counted once staged, as it is once written
    const f = batch(21, 'f');
    wal.append(f.rep, 0, f.length);
    await wal.close();
    expect(records(wal.path)).toEqual([
      [5, 4, ['5:a=v-a', '6:b=v-b', '7:c=v-c', '8:d=v-d']],
      [20, 1, ['20:e=v-e']],
      [21, 1, ['21:f=v-f']], // written after the write(2) of e: its own record
    ]);
    expect(readFileSync(wal.path).length).toBe(sizeBefore + f.length + 7);
  });

  it('keeps a batch of 256 KiB or more a record of its own, and merges up to that size', async () => {
    const wal = new WalWriter(new RecordWriter(join(dir, '000002.log')), 2, () => {});
    const big = new WriteBatch();
    big.put('big', 'x'.repeat(256 * 1024));
    big.seal(1);
    wal.append(big.rep, 0, big.length);
    let seq = 2;
    const small = 'y'.repeat(1000);
    for (let i = 0; i < 300; i++) {
      const b = new WriteBatch();
      b.put(`k${i}`, small);
      b.seal(seq++);
      wal.append(b.rep, 0, b.length);
    }
    await wal.close();
    const got = records(wal.path).map(([first, count]) => [first, count]);
    expect(got[0]).toEqual([1, 1]);
    expect(got.length).toBe(3); // 300 KiB of small batches: two records
    expect(got.slice(1).reduce((n, [, c]) => n + c!, 0)).toBe(300);
    expect(got[2]![0]).toBe(2 + got[1]![1]!);
  });
});
