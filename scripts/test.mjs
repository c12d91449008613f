#!/usr/bin/env node
// The whole test command: install the Debian packages the tests need (scripts/system-deps.mjs), build, type-check
// the tests, lint, run every vitest suite, run the packaging check (scripts/pack-check.mjs: pack, install into a
// project outside the repository, run the README uses; skipped on a Node outside a package's engines), and end with
// one line
// `Tests: N passed, N failed` taken from vitest's JSON report. Exits non-zero if any step fails.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

const bin = (name) => `node_modules/.bin/${name}`;
const report = '.vitest-results.json';

function step(title, cmd, args) {
  process.stdout.write(`\n== ${title}: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  return r.status ?? 1;
}

let failedStep = null;
for (const [title, cmd, args] of [
  ['system packages', process.execPath, ['scripts/system-deps.mjs']],
  ['build', bin('tsc'), ['-b']],
  ['build native helpers', process.execPath, ['packages/offheap/scripts/build-native.mjs']],
  ['typecheck tests', bin('tsc'), ['-p', 'tsconfig.check.json']],
  ['lint', bin('biome'), ['check', '.']],
]) {
  if (step(title, cmd, args) !== 0) {
    failedStep = title;
    break;
  }
}

let passed = 0;
let failed = 0;
if (failedStep === null) {
  rmSync(report, { force: true });
  const status = step('tests', bin('vitest'), [
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ]);
  if (existsSync(report)) {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    passed = r.numPassedTests;
    failed = r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
    // A suite that fails to load has no tests in the counts: count it as a failure.
    for (const s of r.testResults ?? []) if (s.status === 'failed' && s.assertionResults.length === 0) failed++;
  }
  if (status !== 0 && failed === 0) failed = 1;
  if (step('packaging check', process.execPath, ['scripts/pack-check.mjs']) !== 0) failed++;
  if (passed === 0 && failed === 0) failed = 1;
} else {
  process.stdout.write(`\nstep "${failedStep}" failed\n`);
  failed = 1;
}
process.stdout.write(`\nTests: ${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
