import { describe, expect, it } from 'vitest';
import { GcMonitor, memorySnapshot, settleGcEntries } from './memory-probe.js';

describe('GcMonitor', () => {
  it('counts the pauses of a synchronous allocation loop that never yields', async () => {
    await settleGcEntries();
    const monitor = new GcMonitor().start();
    let keep: object[] = [];
    for (let i = 0; i < 2_000_000; i++) {
      keep.push({ i, s: `x${i}` });
      if (keep.length > 10_000) keep = [];
    }
    const pauses = await monitor.stop();
    expect(pauses.count).toBeGreaterThan(0);
    expect(pauses.totalMs).toBeGreaterThan(0);
    expect(pauses.maxMs).toBeLessThanOrEqual(pauses.totalMs);
  });
});

describe('memorySnapshot', () => {
  it('reads positive heap and RSS figures', () => {
    const m = memorySnapshot();
    expect(m.heapUsed).toBeGreaterThan(0);
    expect(m.rss).toBeGreaterThan(m.heapUsed);
  });
});
