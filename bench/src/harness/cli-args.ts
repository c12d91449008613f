/**
 * The command line: `pnpm bench <name> [--records N] [--runs K] [--json FILE] [--svg FILE] [--systems a,b] [--phases x,y]`,
 * parsed with node:util's parseArgs. Parsing is separate from running so that it can be tested.
 */
import { parseArgs } from 'node:util';

/** What the command line asks for; `undefined` fields take the benchmark's defaults. */
export interface CliOptions {
  readonly help: boolean;
  readonly benchmark?: string;
  readonly records?: number;
  readonly runs: number;
  readonly json?: string;
  readonly svg?: string;
  readonly systems?: string[];
  readonly phases?: string[];
}

export const USAGE = `usage: pnpm bench <name> [options]

options:
  --records N      data size (default: the benchmark's own)
  --runs K         measured runs after one warm-up run (default 3)
  --json FILE      also write the results as JSON (format in bench/README.md)
  --svg FILE       also draw the results as an SVG bar chart
  --systems a,b    run only these systems (default: all of the benchmark's)
  --phases x,y     run only these phases (default: all)
  -h, --help       this text and the list of benchmarks`;

/** Parses `argv` (without node and script); throws an Error with a readable message on bad input. */
export function parseCliArgs(argv: readonly string[]): CliOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      records: { type: 'string' },
      runs: { type: 'string' },
      json: { type: 'string' },
      svg: { type: 'string' },
      systems: { type: 'string' },
      phases: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (positionals.length > 1) throw new Error(`one benchmark at a time, got: ${positionals.join(' ')}`);
  return {
    help: values.help === true,
    ...(positionals[0] === undefined ? {} : { benchmark: positionals[0] }),
    ...(values.records === undefined ? {} : { records: positiveInteger('--records', values.records) }),
    runs: values.runs === undefined ? 3 : positiveInteger('--runs', values.runs),
    ...(values.json === undefined ? {} : { json: values.json }),
    ...(values.svg === undefined ? {} : { svg: values.svg }),
    ...(values.systems === undefined ? {} : { systems: list(values.systems) }),
    ...(values.phases === undefined ? {} : { phases: list(values.phases) }),
  };
}

/** Checks that every name of `asked` is one of `known`; returns them in `known`'s order. */
export function selectKnown(what: string, asked: readonly string[] | undefined, known: readonly string[]): string[] {
  if (asked === undefined) return [...known];
  const unknown = asked.filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new Error(`unknown ${what}: ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return known.filter((name) => asked.includes(name));
}

function positiveInteger(flag: string, text: string): number {
  // Accept 1_000_000 and 1e6 as well as 1000000.
  const value = Number(text.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${flag} must be a positive integer, got '${text}'`);
  return value;
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
