// A runner for data-driven tests, after Pebble's `testdata/` files: a file of cases, each a command, a line of dashes
// and the output the command must print, so that a new case is a few lines of text and not code.
//
//   # a comment line (kept as it is on rewrite)
//   put a 1
//   put b 2
//   ----
//   ok
//
//   get a
//   ----
//   1
//
// A case is one or more command lines (the first word is the command, the rest its arguments, in `args`; further
// lines are `input`), then `----`, then the expected output up to the next blank line. An expected output that must
// contain blank lines is fenced by a second `----` line: `----` `----` output `----` `----`.
//
// The commands of one file run in order against one state that the caller's handler keeps (a database, a map), so
// a file reads as a session. `HEAPLESS_REWRITE=1` writes the actual outputs back into the file instead of comparing:
// review the diff before committing it.
import { readFileSync, writeFileSync } from 'node:fs';

/** One case of a data-driven file. */
export interface DataCase {
  /** The first word of the first command line. */
  cmd: string;
  /** The other words of the first command line, split on spaces (`key=value` words are also in `kv`). */
  args: string[];
  /** `key=value` arguments of the first command line, by key. */
  kv: Record<string, string>;
  /** The command lines after the first, joined with `\n` ('' when there is one line). */
  input: string;
  /** The expected output, without its trailing newline. */
  expected: string;
  /** `file:line` of the command, for messages. */
  pos: string;
}

/** Parses a data-driven file into its cases; throws naming the line for a case without `----`. */
export function parseDataFile(text: string, file = '<text>'): { cases: DataCase[]; chunks: string[] } {
  const lines = text.split('\n');
  const cases: DataCase[] = [];
  // The file cut into the text before each case's output and each case's output, so a rewrite keeps comments.
  const chunks: string[] = [];
  let pending: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === '' || line.startsWith('#')) {
      pending.push(line);
      i++;
      continue;
    }
    const start = i;
    const command: string[] = [];
    while (i < lines.length && lines[i] !== '----') {
      if (lines[i]!.trim() === '') throw new Error(`${file}:${start + 1}: a case has no ---- line`);
      command.push(lines[i]!);
      i++;
    }
    if (i >= lines.length) throw new Error(`${file}:${start + 1}: a case has no ---- line`);
    i++; // the ---- line
    const out: string[] = [];
    if (lines[i] === '----') {
      i++;
      while (i < lines.length && !(lines[i] === '----' && lines[i + 1] === '----')) out.push(lines[i++]!);
      if (i >= lines.length) throw new Error(`${file}:${start + 1}: a fenced output is not closed by ---- ----`);
      i += 2;
    } else {
      while (i < lines.length && lines[i]!.trim() !== '') out.push(lines[i++]!);
    }
    pending.push(...command, '----');
    chunks.push(pending.join('\n'));
    pending = [];
    const words = command[0]!.split(' ').filter((w) => w !== '');
    const kv: Record<string, string> = {};
    for (const w of words.slice(1)) {
      const eq = w.indexOf('=');
      if (eq > 0) kv[w.slice(0, eq)] = w.slice(eq + 1);
    }
    cases.push({
      cmd: words[0]!,
      args: words.slice(1),
      kv,
      input: command.slice(1).join('\n'),
      expected: out.join('\n'),
      pos: `${file}:${start + 1}`,
    });
  }
  chunks.push(pending.join('\n'));
  return { cases, chunks };
}

/** The text of an output in a file: fenced when it has blank lines, so that it parses back as it was. */
function formatOutput(out: string): string {
  const body = out.replace(/\n+$/, '');
  return body.split('\n').some((l) => l.trim() === '') ? `----\n${body}\n----\n----` : body;
}

/**
 * Runs every case of `file` through `handle` in order and returns the mismatches as one report ('' when all match),
 * or, with `HEAPLESS_REWRITE=1`, writes the actual outputs into the file and returns ''. A handler that throws
 * prints `error: <code or name>: <message>`, so expected failures are cases too. Use it as
 * `expect(await runDataFile(path, handler)).toBe('')`.
 */
export async function runDataFile(file: string, handle: (c: DataCase) => string | Promise<string>): Promise<string> {
  const { cases, chunks } = parseDataFile(readFileSync(file, 'utf8'), file);
  const actual: string[] = [];
  const report: string[] = [];
  for (const c of cases) {
    let out: string;
    try {
      out = await handle(c);
    } catch (e) {
      const err = e as { code?: unknown; name?: string; message?: string };
      out = `error: ${typeof err.code === 'string' ? err.code : err.name}: ${err.message}`;
    }
    out = out.replace(/\n+$/, '');
    actual.push(out);
    if (out !== c.expected)
      report.push(`${c.pos}: ${c.cmd} ${c.args.join(' ')}\nexpected:\n${c.expected}\ngot:\n${out}\n`);
  }
  if (process.env.HEAPLESS_REWRITE === '1') {
    let text = '';
    for (let k = 0; k < cases.length; k++) text += `${chunks[k]}\n${formatOutput(actual[k]!)}\n`;
    text += chunks[cases.length]!;
    writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
    return '';
  }
  return report.join('\n');
}
