#!/usr/bin/env node
// Installs the Debian packages the tests need and the machine lacks, before any test runs (scripts/test.mjs calls
// it). As root it runs `apt-get update` and `apt-get install -y` for the missing ones; otherwise it stops, naming
// them. A test that needs one of these is never skipped: without the package the test command fails here.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Each Debian package, the file that shows it is there, and the tests that use it. */
const NEEDED = [
  { package: 'chromium', file: '/usr/bin/chromium', for: 'test/e2e-chromium.test.ts' },
  { package: 'openssl', file: '/usr/bin/openssl', for: 'test/e2e-tls.test.ts (makes its certificate)' },
  {
    package: 'nats-server',
    file: '/usr/sbin/nats-server',
    for: 'the replica suites (packages/replica/src), test/e2e-follow.test.ts and `bench replica` (JetStream)',
  },
];

function installed(pkg) {
  // dpkg-query's own format syntax, not a template: `${Status}` is the package's state.
  const format = ['-f=$', '{Status}'].join('');
  const q = spawnSync('dpkg-query', ['-W', format, pkg.package], { encoding: 'utf8' });
  if (q.error === undefined && q.status === 0)
    return q.stdout.trim() === 'install ok installed' && existsSync(pkg.file);
  return existsSync(pkg.file); // no dpkg: the file alone tells
}

function run(cmd, args) {
  process.stdout.write(`system-deps: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return r.error === undefined && r.status === 0;
}

const missing = NEEDED.filter((p) => !installed(p));
if (missing.length > 0) {
  const names = missing.map((p) => p.package);
  const why = missing.map((p) => `  ${p.package} (for ${p.for})`).join('\n');
  if (process.getuid?.() !== 0) {
    process.stderr.write(
      `system-deps: missing Debian packages:\n${why}\ninstall them: apt-get install -y ${names.join(' ')}\n`,
    );
    process.exit(1);
  }
  if (!run('apt-get', ['update']) || !run('apt-get', ['install', '-y', ...names])) {
    process.stderr.write(`system-deps: could not install:\n${why}\n`);
    process.exit(1);
  }
  const still = missing.filter((p) => !installed(p));
  if (still.length > 0) {
    process.stderr.write(`system-deps: still missing after apt-get: ${still.map((p) => p.package).join(' ')}\n`);
    process.exit(1);
  }
}
process.stdout.write(`system-deps: ${NEEDED.map((p) => p.package).join(', ')} present\n`);
