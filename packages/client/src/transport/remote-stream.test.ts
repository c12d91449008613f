import { describe, expect, it } from 'vitest';
import { HeaplessError } from '../protocol/heapless-error.js';
import { RemoteStream } from './remote-stream.js';

function open(opts?: { maxBufferedItems?: number }): { s: RemoteStream<number>; cancelled: number[] } {
  const cancelled: number[] = [];
  const s = new RemoteStream<number>({ cancel: (id) => cancelled.push(id) }, opts);
  s.opening({ stream: 3 });
  return { s, cancelled };
}

const overflow = () => new HeaplessError('WATCH_OVERFLOW', 'behind');

describe('RemoteStream.nextBatch', () => {
  it('takes every item kept at once, in order, and at most max of them', async () => {
    const { s } = open();
    s.pushed([1, 2, 3]);
    s.pushed([4, 5]);
    expect(await s.nextBatch(2)).toEqual([1, 2]);
    expect(await s.nextBatch()).toEqual([3, 4, 5]);
    s.pushed([6]);
    expect(await s.next()).toEqual({ value: 6, done: false });
  });

  it('waits for the next arrival and gives it whole, keeping what exceeds max', async () => {
    const { s } = open();
    const first = s.nextBatch();
    s.pushed([1, 2]);
    expect(await first).toEqual([1, 2]);
    const second = s.nextBatch(2);
    s.pushed([3, 4, 5]);
    expect(await second).toEqual([3, 4]);
    expect(await s.nextBatch()).toEqual([5]);
  });

  it('rejects with the end once the items before it were taken, then on every call', async () => {
    const { s } = open();
    s.pushed([1, 2]);
    s.ended(overflow());
    expect(await s.nextBatch()).toEqual([1, 2]);
    await expect(s.nextBatch()).rejects.toMatchObject({ code: 'WATCH_OVERFLOW' });
    await expect(s.next()).rejects.toMatchObject({ code: 'WATCH_OVERFLOW' });
  });

  it('a waiting batch rejects when the stream ends and resolves [] when the consumer returns', async () => {
    const a = open().s;
    const waiting = a.nextBatch();
    a.ended(overflow());
    await expect(waiting).rejects.toMatchObject({ code: 'WATCH_OVERFLOW' });

    const { s, cancelled } = open();
    const left = s.nextBatch();
    await s.return();
    expect(await left).toEqual([]);
    expect(cancelled).toEqual([3]);
    expect(await s.nextBatch()).toEqual([]);
  });

  it('refuses a second waiter and a max below 1', async () => {
    const { s } = open();
    const waiting = s.nextBatch();
    await expect(s.nextBatch()).rejects.toThrow(TypeError);
    await expect(s.next()).rejects.toThrow(TypeError);
    await expect(s.nextBatch(0)).rejects.toThrow(RangeError);
    s.pushed([7]);
    expect(await waiting).toEqual([7]);
  });

  it('counts items kept while no batch is taken towards maxBufferedItems and ends with WATCH_OVERFLOW', async () => {
    const { s, cancelled } = open({ maxBufferedItems: 3 });
    s.pushed([1, 2, 3]);
    s.pushed([4]);
    expect(cancelled).toEqual([3]);
    expect(await s.nextBatch()).toEqual([1, 2, 3, 4]);
    await expect(s.nextBatch()).rejects.toMatchObject({ code: 'WATCH_OVERFLOW' });
  });

  it('batches() iterates the same items as the item iterator and cancels when left', async () => {
    const { s, cancelled } = open();
    s.pushed([1, 2, 3]);
    const seen: number[] = [];
    const later = (async () => {
      for await (const batch of s.batches(2)) {
        seen.push(...batch);
        if (seen.length === 5) break;
      }
    })();
    await new Promise((r) => setImmediate(r)); // the loop took [1, 2] and [3] and waits
    s.pushed([4, 5, 6]);
    await later;
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(cancelled).toEqual([3]);
  });
});
