import { describe, expect, it } from 'vitest';
import { Backoff, retry } from './retry.js';

describe('Backoff', () => {
  it('doubles from the first delay up to the cap, starts over on reset; equal bounds give a fixed delay', () => {
    const b = new Backoff(50, 2_000);
    expect(Array.from({ length: 8 }, () => b.next())).toEqual([50, 100, 200, 400, 800, 1_600, 2_000, 2_000]);
    b.reset();
    expect(b.next()).toBe(50);
    const fixed = new Backoff(250, 250);
    expect([fixed.next(), fixed.next(), fixed.next()]).toEqual([250, 250, 250]);
  });

  it('wake() ends a long wait at once', async () => {
    const b = new Backoff(60_000, 60_000);
    const waiting = b.wait();
    b.wake();
    await waiting;
  });
});

describe('retry', () => {
  const quick = () => new Backoff(1, 1);

  it('retries what is retryable, telling onRetry, and resolves with the first success', async () => {
    const seen: unknown[] = [];
    let calls = 0;
    const value = await retry(
      async () => {
        if (++calls < 3) throw new Error(`attempt ${calls}`);
        return 'done';
      },
      { backoff: quick(), stopped: () => false, retryable: () => true, onRetry: (err) => seen.push(err) },
    );
    expect(value).toBe('done');
    expect(seen.map((e) => (e as Error).message)).toEqual(['attempt 1', 'attempt 2']);
  });

  it('throws a failure that is not retryable, or what onRetry throws', async () => {
    const fatal = new Error('fatal');
    await expect(
      retry(() => Promise.reject(fatal), { backoff: quick(), stopped: () => false, retryable: () => false }),
    ).rejects.toBe(fatal);
    const stop = new Error('stop');
    await expect(
      retry(() => Promise.reject(new Error('again')), {
        backoff: quick(),
        stopped: () => false,
        retryable: () => true,
        onRetry: () => {
          throw stop;
        },
      }),
    ).rejects.toBe(stop);
  });

  it('resolves undefined once stopped: before an attempt, or after a failure without telling onRetry', async () => {
    let calls = 0;
    const none = await retry(async () => ++calls, { backoff: quick(), stopped: () => true, retryable: () => true });
    expect([none, calls]).toEqual([undefined, 0]);
    let stopping = false;
    const told: unknown[] = [];
    const after = await retry(
      async () => {
        calls++;
        stopping = true;
        throw new Error('closed under it');
      },
      { backoff: quick(), stopped: () => stopping, retryable: () => true, onRetry: (e) => told.push(e) },
    );
    expect([after, calls, told]).toEqual([undefined, 1, []]);
  });

  it('pauseFirst waits before the first attempt, and a wake ends that wait', async () => {
    const backoff = new Backoff(60_000, 60_000);
    const order: string[] = [];
    const running = retry(async () => order.push('attempt'), {
      backoff,
      pauseFirst: true,
      stopped: () => false,
      retryable: () => true,
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    backoff.wake();
    await running;
    expect(order).toEqual(['attempt']);
  });
});
