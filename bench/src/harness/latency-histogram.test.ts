import { describe, expect, it } from 'vitest';
import type { RunContext, Sample } from './benchmark.js';
import { LatencyRecorder } from './latency-histogram.js';

describe('LatencyRecorder', () => {
  it('reports percentiles in microseconds', () => {
    const recorder = new LatencyRecorder();
    for (let i = 1; i <= 1000; i++) recorder.recordNanoseconds(i * 1000); // 1 µs .. 1000 µs
    expect(recorder.count).toBe(1000);
    expect(recorder.percentileMicros(50)).toBeCloseTo(500, -1);
    expect(recorder.percentileMicros(99)).toBeCloseTo(990, -1);

    const samples: Sample[] = [];
    recorder.report({ record: (s: Sample) => samples.push(s) } as unknown as RunContext, 'put-sync');
    expect(samples.map((s) => s.metric)).toEqual(['p50', 'p99', 'p99.9', 'max']);
    expect(samples.every((s) => s.unit === 'µs' && s.better === 'lower' && s.case === 'put-sync')).toBe(true);
    expect(samples[3]!.value).toBeCloseTo(1000, -1);
    recorder.destroy();
  });
});
