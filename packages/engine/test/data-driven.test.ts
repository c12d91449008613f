import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDataFile, runDataFile } from './data-driven.js';

const FILE = `# a session
put a 1
put b 2
----
ok

get a x=1
more input
----
1

dump
----
----
line one

line three
----
----
`;

let dir = '';
afterEach(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
  dir = '';
  delete process.env.HEAPLESS_REWRITE;
});

describe('data-driven runner', () => {
  it('parses commands, arguments, input lines and fenced outputs', () => {
    const { cases } = parseDataFile(FILE);
    expect(cases.map((c) => [c.cmd, c.args, c.input, c.expected])).toEqual([
      ['put', ['a', '1'], 'put b 2', 'ok'],
      ['get', ['a', 'x=1'], 'more input', '1'],
      ['dump', [], '', 'line one\n\nline three'],
    ]);
    expect(cases[1]!.kv).toEqual({ x: '1' });
    expect(cases[1]!.pos).toBe('<text>:7');
  });

  it('refuses a case without its ---- line, naming the line', () => {
    expect(() => parseDataFile('put a 1\n\nget a\n----\n1\n', 'f')).toThrow('f:1: a case has no ---- line');
    expect(() => parseDataFile('get a\n----\n----\nnever closed\n', 'f')).toThrow('not closed');
  });

  it('reports each mismatch with its position, and prints a thrown error as a result', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dd-'));
    const f = join(dir, 'cases');
    writeFileSync(f, 'boom\n----\nerror: E_X: bad\n\nsay hi\n----\nhello\n');
    const report = await runDataFile(f, (c) => {
      if (c.cmd === 'boom') throw Object.assign(new Error('bad'), { code: 'E_X' });
      return c.args.join(' ');
    });
    expect(report).toContain(`${f}:5: say hi\nexpected:\nhello\ngot:\nhi`);
    expect(report).not.toContain(':1:');
  });

  it('rewrites the outputs in place, comments and fences kept, so the file then passes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dd-'));
    const f = join(dir, 'cases');
    writeFileSync(f, FILE.replace('ok', 'stale').replace('line three', 'old'));
    const handler = (c: { cmd: string }) => (c.cmd === 'put' ? 'ok' : c.cmd === 'get' ? '1' : 'line one\n\nline three');
    expect(await runDataFile(f, handler)).not.toBe('');
    process.env.HEAPLESS_REWRITE = '1';
    expect(await runDataFile(f, handler)).toBe('');
    delete process.env.HEAPLESS_REWRITE;
    expect(readFileSync(f, 'utf8')).toBe(FILE);
    expect(await runDataFile(f, handler)).toBe('');
  });
});
