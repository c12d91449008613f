import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS } from '../base/max-timer.js';
import { Engine } from '../db/engine.js';
import { delayUntilNext, PeriodicCompaction, type SchedulerClock } from './periodic-compaction.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-periodic-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface FakeTimer {
  fn: () => void;
  at: number;
  unrefed: boolean;
  cleared: boolean;
  unref(): void;
}

/** A clock whose time and timers the test moves by hand. */
class FakeClock implements SchedulerClock {
  time = new Date(2026, 11, 2, 1, 0, 0);
  timers: FakeTimer[] = [];
  now(): Date {
    return new Date(this.time.getTime());
  }
  setTimeout(fn: () => void, ms: number): FakeTimer {
    const t: FakeTimer = {
      fn,
      at: this.time.getTime() + ms,
      unrefed: false,
      cleared: false,
      unref() {
        this.unrefed = true;
      },
    };
    this.timers.push(t);
    return t;
  }
  clearTimeout(timer: unknown): void {
    (timer as FakeTimer).cleared = true;
  }
  /** Moves to the earliest pending timer and runs it. */
  fireNext(): void {
    const t = this.timers.filter((x) => !x.cleared).sort((a, b) => a.at - b.at)[0]!;
    t.cleared = true;
    this.time = new Date(t.at);
    t.fn();
  }
  get pending(): number {
    return this.timers.filter((x) => !x.cleared).length;
  }
}

describe('delayUntilNext', () => {
  it('waits everySeconds, or until the next time the local clock shows HH:MM', () => {
    const at = (h: number, m: number) => new Date(2026, 11, 2, h, m, 0);
    expect(delayUntilNext({ everySeconds: 5 }, at(1, 0))).toBe(5000);
    expect(delayUntilNext({ at: '03:30' }, at(1, 0))).toBe(2.5 * 3600_000);
    expect(delayUntilNext({ at: '03:30' }, at(4, 0))).toBe(23.5 * 3600_000);
    expect(delayUntilNext({ at: '03:30' }, at(3, 30))).toBe(24 * 3600_000);
    expect(delayUntilNext({ at: '00:00' }, at(23, 59))).toBe(60_000);
  });
});

describe('PeriodicCompaction', () => {
  it('runs on schedule with an unref timer, one run at a time, and stops at stop()', async () => {
    const clock = new FakeClock();
    let calls = 0;
    let finish: () => void = () => {};
    const p = new PeriodicCompaction(
      { at: '02:00' },
      () => {
        calls++;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      clock,
    );
    expect(clock.pending).toBe(1);
    expect(clock.timers[0]!.unrefed).toBe(true);
    clock.fireNext();
    expect(clock.time.getHours()).toBe(2);
    expect(calls).toBe(1);
    // No next run is armed while this one runs.
    expect(clock.pending).toBe(0);
    finish();
    await vi.waitFor(() => expect(p.runs).toBe(1));
    expect(clock.pending).toBe(1);
    clock.fireNext();
    expect(clock.time.getDate()).toBe(3); // the next day at 02:00
    expect(calls).toBe(2);
    const stopped = p.stop();
    finish();
    await stopped;
    expect(clock.pending).toBe(0);
  });

  it('waits a period longer than one timer can (~24.8 days) in steps, compacting only when it is due', async () => {
    const clock = new FakeClock();
    let compactions = 0;
    const days30 = 30 * 24 * 3600;
    const p = new PeriodicCompaction({ everySeconds: days30 }, async () => void compactions++, clock);
    const start = clock.time.getTime();
    expect(clock.timers[0]!.at - start).toBe(MAX_TIMER_MS); // no timer beyond what setTimeout takes
    clock.fireNext();
    expect(compactions).toBe(0); // 24.8 days: not yet
    expect(clock.pending).toBe(1);
    clock.fireNext();
    expect(clock.time.getTime() - start).toBe(days30 * 1000);
    expect(compactions).toBe(1);
    await vi.waitFor(() => expect(p.runs).toBe(1));
    expect(clock.pending).toBe(1); // the next period, again in steps
    await p.stop();
    expect(clock.pending).toBe(0);
  });

  it('keeps to its schedule after a failed run, and does nothing when the schedule is false', async () => {
    const clock = new FakeClock();
    const p = new PeriodicCompaction({ everySeconds: 1 }, () => Promise.reject(new Error('boom')), clock);
    clock.fireNext();
    await vi.waitFor(() => expect(p.runs).toBe(1));
    expect(clock.pending).toBe(1);
    await p.stop();
    expect(clock.pending).toBe(0);
    const never = new PeriodicCompaction(false, () => Promise.resolve(), clock);
    expect(clock.pending).toBe(0);
    await never.stop();
  });
});

describe('the periodicCompaction option', () => {
  it('compacts level 0 down on its own, counted in stats', async () => {
    const db = await Engine.open(dir, { periodicCompaction: { everySeconds: 0.05 }, level0CompactionTrigger: 8 });
    try {
      for (let t = 0; t < 3; t++) {
        for (let i = 0; i < 100; i++) await db.put(`k${i}`, `v${t}`);
        await db.flush();
      }
      await vi.waitFor(
        () => {
          expect(db.stats().levels[0]!.files).toBe(0);
          expect(db.stats().periodicCompactions).toBeGreaterThanOrEqual(1);
        },
        { timeout: 20_000, interval: 20 },
      );
      expect(db.stats().compactions).toBeGreaterThanOrEqual(1);
      expect(Buffer.from(db.getSync('k7')!).toString()).toBe('v2');
    } finally {
      await db.close();
    }
  });

  it('refuses a malformed schedule', async () => {
    for (const periodicCompaction of [
      { everySeconds: 0 },
      { everySeconds: -1 },
      { at: '24:00' },
      { at: '3:30' },
      { at: '03:30', everySeconds: 5 },
      {},
      true,
    ]) {
      await expect(Engine.open(dir, { periodicCompaction } as never)).rejects.toMatchObject({
        code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
        message: expect.stringMatching(/periodicCompaction/),
      });
    }
  });
});
