/**
 * The machine-readable result, the format of DESIGN.md ("Measuring"):
 * `{"bench": NAME, "rows": [{"system", "case", "metric", "value", "unit"}...]}`, where `value` is the median over the
 * measured runs. Each row also carries `better` ('higher'|'lower'), `min`, `max`, `runs` (every run's value, `null`
 * where a run had none) and, when the baseline has the same case and metric, `ratio`, `ratioMin`, `ratioMax`
 * (median and range of the per-run ratios to the baseline). Top-level extras describe the run: `baseline`, `records`,
 * `runs`, `systems`, `unavailable` (system → reason), `node`, `date`.
 */
import type { SummaryRow } from './statistics.js';

/** One row of the JSON document. */
export interface JsonRow {
  system: string;
  case: string;
  metric: string;
  value: number;
  unit: string;
  better: 'higher' | 'lower';
  min: number;
  max: number;
  runs: (number | null)[];
  ratio?: number;
  ratioMin?: number;
  ratioMax?: number;
}

/** The whole JSON document. */
export interface JsonReport {
  bench: string;
  rows: JsonRow[];
  baseline: string;
  records: number;
  runs: number;
  systems: string[];
  unavailable: Record<string, string>;
  node: string;
  date: string;
}

/** What the run was, besides its rows. */
export interface ReportHeader {
  readonly bench: string;
  readonly baseline: string;
  readonly records: number;
  readonly runs: number;
  readonly systems: readonly string[];
  readonly unavailable: ReadonlyMap<string, string>;
}

/** Builds the JSON document from summarized rows. */
export function buildJsonReport(header: ReportHeader, rows: readonly SummaryRow[], date = new Date()): JsonReport {
  return {
    bench: header.bench,
    rows: rows.map((row) => ({
      system: row.system,
      case: row.case,
      metric: row.metric,
      value: row.median,
      unit: row.unit,
      better: row.better,
      min: row.min,
      max: row.max,
      runs: row.runs.map((v) => v ?? null),
      ...(row.ratio === undefined ? {} : { ratio: row.ratio.median, ratioMin: row.ratio.min, ratioMax: row.ratio.max }),
    })),
    baseline: header.baseline,
    records: header.records,
    runs: header.runs,
    systems: [...header.systems],
    unavailable: Object.fromEntries(header.unavailable),
    node: process.version,
    date: date.toISOString(),
  };
}
