/**
 * The table as a picture: one small bar chart per (case, metric), one bar per system, each scaled to the largest
 * value of its own chart, labelled with the median and the ratio to the baseline. Self-contained SVG (no scripts,
 * no external fonts) that a browser or an image viewer shows as it is.
 */
import { formatRatio, formatValue } from './format-units.js';
import type { ReportHeader } from './report-json.js';
import type { SummaryRow } from './statistics.js';

/** Geometry, in SVG user units (pixels at 100%). */
const PANEL_WIDTH = 520;
const LABEL_WIDTH = 130;
const BAR_AREA = 250;
const BAR_HEIGHT = 16;
const BAR_GAP = 6;
const PANEL_TITLE = 26;
const PANEL_PADDING = 14;
const COLUMNS = 2;
const PAGE_TITLE = 44;

/** One colour per system, in the order of `header.systems` (Okabe–Ito palette: distinguishable with colour blindness). */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

/** Renders every (case, metric) of `rows` as an SVG document. */
export function renderSvgChart(header: ReportHeader, rows: readonly SummaryRow[]): string {
  const systems = header.systems.filter((s) => !header.unavailable.has(s));
  const colour = new Map(systems.map((s, i) => [s, PALETTE[i % PALETTE.length]!]));
  const panels: SummaryRow[][] = [];
  const index = new Map<string, SummaryRow[]>();
  for (const row of [...rows.filter((r) => r.system === header.baseline), ...rows]) {
    const key = `${row.case}\u0000${row.metric}`;
    let panel = index.get(key);
    if (panel === undefined) {
      panel = [];
      index.set(key, panel);
      panels.push(panel);
    }
    if (!panel.includes(row)) panel.push(row);
  }
  for (const panel of panels) panel.sort((a, b) => systems.indexOf(a.system) - systems.indexOf(b.system));

  const panelHeight = PANEL_TITLE + systems.length * (BAR_HEIGHT + BAR_GAP) + PANEL_PADDING;
  const width = COLUMNS * PANEL_WIDTH;
  const height = PAGE_TITLE + Math.ceil(panels.length / COLUMNS) * panelHeight;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="16" font-weight="bold">${escapeXml(`${header.bench}: ${header.records} records`)}</text>`,
    `<text x="12" y="38" fill="#555555">${escapeXml(`median of ${header.runs} run(s); ×ratio to ${header.baseline}, run by run`)}</text>`,
  ];
  panels.forEach((panel, i) => {
    const x = (i % COLUMNS) * PANEL_WIDTH;
    const y = PAGE_TITLE + Math.floor(i / COLUMNS) * panelHeight;
    out.push(renderPanel(panel, x, y, systems, colour));
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function renderPanel(
  panel: readonly SummaryRow[],
  x: number,
  y: number,
  systems: readonly string[],
  colour: ReadonlyMap<string, string>,
): string {
  const first = panel[0]!;
  const unit = first.metric === first.unit ? first.unit : `${first.metric}, ${first.unit}`;
  const hint = first.better === 'higher' ? 'higher is better' : 'lower is better';
  const max = Math.max(...panel.map((r) => r.median));
  const parts = [
    `<g transform="translate(${x},${y})">`,
    `<text x="12" y="18" font-weight="bold">${escapeXml(`${first.case} (${unit})`)}</text>`,
    `<text x="${PANEL_WIDTH - 12}" y="18" text-anchor="end" fill="#777777">${hint}</text>`,
  ];
  systems.forEach((system, i) => {
    const by = PANEL_TITLE + i * (BAR_HEIGHT + BAR_GAP);
    parts.push(`<text x="${LABEL_WIDTH - 6}" y="${by + 12}" text-anchor="end">${escapeXml(system)}</text>`);
    const row = panel.find((r) => r.system === system);
    if (row === undefined) {
      parts.push(`<text x="${LABEL_WIDTH}" y="${by + 12}" fill="#999999">–</text>`);
      return;
    }
    const w = max > 0 ? Math.max(1, (row.median / max) * BAR_AREA) : 1;
    const label = `${formatValue(row.median, row.unit)}${row.ratio === undefined ? '' : `  ${formatRatio(row.ratio.median)}`}`;
    parts.push(
      `<rect x="${LABEL_WIDTH}" y="${by}" width="${w.toFixed(1)}" height="${BAR_HEIGHT}" fill="${colour.get(system)}"/>`,
      `<text x="${(LABEL_WIDTH + w + 6).toFixed(1)}" y="${by + 12}">${escapeXml(label)}</text>`,
    );
  });
  parts.push('</g>');
  return parts.join('\n');
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}
