#!/usr/bin/env node
/**
 * `pnpm bench <name> [--records N] [--runs K] [--json FILE] [--svg FILE] [--systems a,b] [--phases x,y]`
 *
 * Runs a benchmark's systems side by side (one child process per system and run), prints a table on stdout,
 * progress on stderr, and with `--json` writes the results in the format of DESIGN.md, with `--svg` a bar chart. See bench/README.md.
 */
import { writeFile } from 'node:fs/promises';
import process from 'node:process';
import { parseCliArgs, selectKnown, USAGE } from './harness/cli-args.js';
import { runPlan } from './harness/orchestrator.js';
import { createProgressDisplay } from './harness/progress-display.js';
import { benchmarkNames, loadDefinition } from './harness/registry.js';
import { buildJsonReport, type ReportHeader } from './harness/report-json.js';
import { renderTable } from './harness/report-table.js';
import { summarize } from './harness/statistics.js';
import { renderSvgChart } from './harness/svg-chart.js';

async function main(argv: readonly string[]): Promise<number> {
  const options = parseCliArgs(argv);
  if (options.help || options.benchmark === undefined) {
    process.stdout.write(`${USAGE}\n\nbenchmarks: ${benchmarkNames().join(', ')}\n`);
    return options.help ? 0 : 2;
  }
  const definition = await loadDefinition(options.benchmark);
  // Ctrl-C stops the running child through the signal, so its temporary data directory is still removed.
  const interrupt = new AbortController();
  process.once('SIGINT', () => interrupt.abort());
  const plan = {
    definition,
    systems: selectKnown('systems', options.systems, definition.systems),
    phases: selectKnown('phases', options.phases, definition.phases),
    records: options.records ?? definition.defaultRecords,
    runs: options.runs,
    signal: interrupt.signal,
  };

  const results = await runPlan(plan, createProgressDisplay());
  const rows = summarize(results.series, definition.baseline);
  const header: ReportHeader = {
    bench: definition.name,
    baseline: definition.baseline,
    records: plan.records,
    runs: plan.runs,
    systems: plan.systems,
    unavailable: results.unavailable,
  };
  process.stdout.write(`${renderTable(header, rows)}\n`);
  if (options.json !== undefined) {
    await writeFile(options.json, `${JSON.stringify(buildJsonReport(header, rows), null, 2)}\n`);
    process.stderr.write(`wrote ${options.json}\n`);
  }
  if (options.svg !== undefined) {
    await writeFile(options.svg, renderSvgChart(header, rows));
    process.stderr.write(`wrote ${options.svg}\n`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
