/**
 * Summaries of repeated runs: median and range per figure, and ratios to a baseline computed run by run.
 *
 * Ratios are taken per run (system's run r over the baseline's run r) and then summarized, rather than dividing the
 * two medians, because the systems of one run execute back to back: a noisy neighbour that slows run r slows both
 * sides of its ratio, so per-run ratios are steadier than the figures themselves on a shared machine.
 */
import type { Better } from './benchmark.js';

/** Median, minimum and maximum of a set of numbers. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** Returns the median (mean of the two middle values for an even count), min and max; throws on an empty list. */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new RangeError('spread() of an empty list');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

/** All measured runs of one (system, case, metric); `runs[r - 1]` is run r, `undefined` where the run had none. */
export interface Series {
  readonly system: string;
  readonly case: string;
  readonly metric: string;
  readonly unit: string;
  readonly better: Better;
  readonly runs: readonly (number | undefined)[];
}

/** A series summarized, with its ratio to the baseline's series of the same case and metric when there is one. */
export interface SummaryRow extends Series, Spread {
  /** Median over runs of (this run's value / the baseline's value in the same run). */
  readonly ratio?: Spread;
}

/**
 * Per-run ratios of `series` to `baseline`: one entry per run where both have a value and the baseline's is not 0.
 */
export function runRatios(
  series: readonly (number | undefined)[],
  baseline: readonly (number | undefined)[],
): number[] {
  const ratios: number[] = [];
  const n = Math.min(series.length, baseline.length);
  for (let r = 0; r < n; r++) {
    const a = series[r];
    const b = baseline[r];
    if (a !== undefined && b !== undefined && b !== 0) ratios.push(a / b);
  }
  return ratios;
}

/**
 * Summarizes every series; series without any value are dropped. The ratio is filled in when the baseline system
 * has the same case and metric (the baseline's own ratio is 1 by construction and is included).
 */
export function summarize(all: readonly Series[], baselineSystem: string): SummaryRow[] {
  const baselineRuns = new Map<string, readonly (number | undefined)[]>();
  for (const s of all) {
    if (s.system === baselineSystem) baselineRuns.set(caseKey(s.case, s.metric), s.runs);
  }
  const rows: SummaryRow[] = [];
  for (const s of all) {
    const values = s.runs.filter((v): v is number => v !== undefined);
    if (values.length === 0) continue;
    const base = baselineRuns.get(caseKey(s.case, s.metric));
    const ratios = base === undefined ? [] : runRatios(s.runs, base);
    rows.push({ ...s, ...spread(values), ...(ratios.length > 0 ? { ratio: spread(ratios) } : {}) });
  }
  return rows;
}

function caseKey(caseName: string, metric: string): string {
  return `${caseName}\u0000${metric}`;
}
