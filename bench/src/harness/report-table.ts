/**
 * The tables for people: one line per (case, metric), one column per system, `–` where a system has no such case.
 * The first table reads `median ×ratio` (the ratio being the median of per-run ratios to the baseline); the second,
 * printed when there was more than one run, gives each figure's `min–max` over the runs. Two narrow tables read
 * better than one table twice as wide. Lines follow the order in which the baseline reported its cases;
 * unavailable systems are listed at the end with the reason.
 */
import { formatRatio, formatValue } from './format-units.js';
import type { ReportHeader } from './report-json.js';
import type { SummaryRow } from './statistics.js';

/** Renders the tables as text lines (no trailing newline). */
export function renderTable(header: ReportHeader, rows: readonly SummaryRow[]): string {
  const systems = header.systems.filter((s) => !header.unavailable.has(s));
  const lines = caseLines(header, rows);
  const cellOf = (format: (row: SummaryRow) => string) => (line: readonly SummaryRow[], system: string) => {
    const row = line.find((r) => r.system === system);
    return row === undefined ? '–' : format(row);
  };
  const out = [
    `${header.bench}: ${header.records} records, median of ${header.runs} run(s), ×ratio to ${header.baseline} run by run`,
    ...grid(systems, lines, cellOf(medianAndRatio)),
  ];
  if (header.runs > 1)
    out.push('', `range over the ${header.runs} runs (min–max)`, ...grid(systems, lines, cellOf(range)));
  for (const [system, reason] of header.unavailable) out.push(`${system}: not available (${reason})`);
  return out.join('\n');
}

/** Groups rows by (case, metric), baseline's order first. */
function caseLines(header: ReportHeader, rows: readonly SummaryRow[]): SummaryRow[][] {
  const lines = new Map<string, SummaryRow[]>();
  for (const row of [...rows.filter((r) => r.system === header.baseline), ...rows]) {
    const key = `${row.case}\u0000${row.metric}`;
    const line = lines.get(key) ?? [];
    if (!line.includes(row)) line.push(row);
    lines.set(key, line);
  }
  return [...lines.values()];
}

/** Lays out a header line, a rule and one line per case, left-aligned labels and right-aligned cells. */
function grid(
  systems: readonly string[],
  lines: readonly SummaryRow[][],
  cell: (line: readonly SummaryRow[], system: string) => string,
): string[] {
  const table: string[][] = [['case', 'metric', ...systems]];
  for (const line of lines) {
    const { case: caseName, metric, unit } = line[0]!;
    table.push([caseName, metric === unit ? metric : `${metric} (${unit})`, ...systems.map((s) => cell(line, s))]);
  }
  const widths = table[0]!.map((_, col) => Math.max(...table.map((line) => line[col]!.length)));
  const render = (line: string[]) =>
    line.map((text, col) => (col < 2 ? text.padEnd(widths[col]!) : text.padStart(widths[col]!))).join('  ');
  return [render(table[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...table.slice(1).map(render)];
}

function medianAndRatio(row: SummaryRow): string {
  const median = formatValue(row.median, row.unit);
  return row.ratio === undefined ? median : `${median} ${formatRatio(row.ratio.median)}`;
}

function range(row: SummaryRow): string {
  const min = formatValue(row.min, row.unit);
  const max = formatValue(row.max, row.unit);
  return min === max ? min : `${min}–${max}`;
}
