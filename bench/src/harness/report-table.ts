/**
 * The table for people: one line per (case, metric), one column per system. A cell reads
 * `median (min–max) ×ratio`, the ratio being the median of per-run ratios to the baseline; `–` marks a case the
 * system does not have. Lines follow the order in which the baseline reported its cases. Unavailable systems are
 * listed under the table with the reason.
 */
import { formatRatio, formatValue } from './format-units.js';
import type { ReportHeader } from './report-json.js';
import type { SummaryRow } from './statistics.js';

/** Renders the table as text lines (no trailing newline). */
export function renderTable(header: ReportHeader, rows: readonly SummaryRow[]): string {
  const systems = header.systems.filter((s) => !header.unavailable.has(s));
  const lines: string[][] = [['case', 'metric', ...systems]];
  const seen = new Set<string>();
  // The baseline runs every case, in the benchmark's order; other systems' extra cases follow.
  const ordered = [...rows.filter((r) => r.system === header.baseline), ...rows];
  for (const row of ordered) {
    const key = `${row.case}\u0000${row.metric}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const cells = systems.map((system) => {
      const cell = rows.find((r) => r.system === system && r.case === row.case && r.metric === row.metric);
      return cell === undefined ? '–' : formatCell(cell, header.runs);
    });
    lines.push([row.case, `${row.metric}${row.metric === row.unit ? '' : ` (${row.unit})`}`, ...cells]);
  }

  const widths = lines[0]!.map((_, col) => Math.max(...lines.map((line) => line[col]!.length)));
  const render = (line: string[]) =>
    line.map((cell, col) => (col < 2 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('  ');
  const out = [
    `${header.bench}: ${header.records} records, median of ${header.runs} run(s) (min–max), ×ratio to ${header.baseline} run by run`,
    render(lines[0]!),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...lines.slice(1).map(render),
  ];
  for (const [system, reason] of header.unavailable) out.push(`${system}: not available (${reason})`);
  return out.join('\n');
}

function formatCell(row: SummaryRow, runs: number): string {
  const median = formatValue(row.median, row.unit);
  const range = runs > 1 ? ` (${formatValue(row.min, row.unit)}–${formatValue(row.max, row.unit)})` : '';
  const ratio = row.ratio === undefined ? '' : ` ${formatRatio(row.ratio.median)}`;
  return `${median}${range}${ratio}`;
}
