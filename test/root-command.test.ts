// `pnpm heapless <command>` from the repository root runs scripts/heapless.mjs (package.json): the build brought up to
// date with its output on stderr, then the actor's `heapless` with the arguments, its stdout alone on stdout and its
// exit status passed on, so that `--json` output stays parseable.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '@heapless/engine';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'scripts/heapless.mjs'), ...args], { cwd: root, encoding: 'utf8' });

it('runs the heapless command from the root: clean stdout for --json, the exit status and error code passed on', async () => {
  const version = run('--version');
  expect(version.status).toBe(0);
  expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  const dir = mkdtempSync(join(tmpdir(), 'heapless-root-command-'));
  try {
    const db = await Engine.open(join(dir, 'db'));
    await db.put('a', '1');
    await db.close();
    const stats = run('engine', 'stats', join(dir, 'db'), '--json');
    expect(stats.status).toBe(0);
    expect(JSON.parse(stats.stdout)).toHaveProperty('stats.lastSequence', 1);
    const missing = run('engine', 'stats', join(dir, 'nothing'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_NOT_FOUND: /m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000); // the build check (tsc -b) takes seconds even when nothing changed
