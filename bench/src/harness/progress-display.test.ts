import { describe, expect, it } from 'vitest';
import { LINE_INTERVAL_MS, LineDisplay } from './progress-display.js';

describe('LineDisplay (progress without a terminal)', () => {
  function display() {
    let clock = 0;
    const lines: string[] = [];
    const shown = new LineDisplay({ write: (text: string) => lines.push(text.trimEnd()) !== 0 }, () => clock);
    return { shown, lines, at: (ms: number) => (clock = ms) };
  }

  it('prints the count and percent reached every few seconds, and the end of the phase', () => {
    const { shown, lines, at } = display();
    shown.update('run 1/3 lmdb load', 0, 200_000);
    // an update every 250 ms for 12 s, 1,000 documents each
    for (let t = 250, done = 1000; t <= 12_000; t += 250, done += 1000) {
      at(t);
      shown.update('run 1/3 lmdb load', done, 200_000);
    }
    at(12_100);
    shown.update('run 1/3 lmdb load', 200_000, 200_000);
    expect(lines).toEqual([
      'run 1/3 lmdb load: 0/200000 (0%)',
      `run 1/3 lmdb load: ${(LINE_INTERVAL_MS / 250) * 1000}/200000 (${LINE_INTERVAL_MS / 250 / 2}%)`,
      `run 1/3 lmdb load: ${((2 * LINE_INTERVAL_MS) / 250) * 1000}/200000 (${LINE_INTERVAL_MS / 250}%)`,
      'run 1/3 lmdb load: 200000/200000 (100%)',
    ]);
    expect(LINE_INTERVAL_MS).toBeLessThanOrEqual(5_000);
  });

  it('shows a phase shorter than the interval ending, and the next phase starting', () => {
    const { shown, lines, at } = display();
    shown.update('a', 0, 10);
    at(100);
    shown.update('a', 5, 10);
    at(200);
    shown.update('a', 10, 10);
    shown.update('a', 10, 10);
    shown.update('b', 0, 3);
    expect(lines).toEqual(['a: 0/10 (0%)', 'a: 10/10 (100%)', 'b: 0/3 (0%)']);
  });
});
