import { describe, expect, it } from 'vitest';
import { PROGRESS_INTERVAL_MS, ThrottledTicker } from './progress-ticker.js';

type Sent = { done: number; total: number };

function tickerWithClock(total: number) {
  let clock = 0;
  let reads = 0;
  const sent: Sent[] = [];
  const ticker = new ThrottledTicker(
    'load',
    total,
    (m) => sent.push({ done: m.done, total: m.total }),
    () => {
      reads++;
      return clock;
    },
  );
  return {
    ticker,
    sent,
    advance: (ms: number) => {
      clock += ms;
    },
    reads: () => reads,
  };
}

describe('ThrottledTicker', () => {
  it('forwards the counts of a workload that updates once per batch, a few times a second', () => {
    // seed-open-read's load: 200 batches of 1,000 documents, one update each, slower than the interval
    const { ticker, sent, advance } = tickerWithClock(200_000);
    for (let batch = 1; batch <= 200; batch++) {
      advance(PROGRESS_INTERVAL_MS + 50);
      ticker.update(batch * 1000);
    }
    ticker.finish();
    expect(sent[0]).toEqual({ done: 0, total: 200_000 });
    expect(sent.at(-1)).toEqual({ done: 200_000, total: 200_000 });
    const between = sent.slice(1, -1).map((m) => m.done);
    expect(between.length).toBeGreaterThan(100);
    expect(between).toEqual([...between].sort((a, b) => a - b));
    expect(between.every((done) => done > 0 && done <= 200_000)).toBe(true);
  });

  it('sends at most one message per interval, and reads the clock rarely, when updated per operation', () => {
    const { ticker, sent, advance, reads } = tickerWithClock(10_000_000);
    // 10 million updates at 10 million a second: one second of work
    for (let i = 1; i <= 10_000_000; i++) {
      advance(0.0001);
      ticker.update(i);
    }
    const progress = sent.slice(1).map((m) => m.done);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(1000 / PROGRESS_INTERVAL_MS + 1);
    expect(reads()).toBeLessThan(10_000);
  });
});
