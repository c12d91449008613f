#!/usr/bin/env node
/**
 * The packaging check: what a user of the packages gets outside this repository, on the Node running this script
 * (`<node> scripts/pack-check.mjs`; the packages must be built). It packs every package with `pnpm pack` (which
 * rewrites `workspace:` dependencies to versions), then in a temporary folder outside the repository:
 *
 * - runs `npm publish --dry-run` on each tarball and fails on a warning (but the one for not being logged in);
 * - installs the tarballs into a fresh project with npm and with pnpm 10, each at its default settings, and fails on
 *   an install warning that is ours (one naming a @heapless package or `heapless`, or any engine warning: our
 *   `engines` promise that the dependencies install cleanly); other warnings are printed as notes;
 * - runs each package's README shortest use in both projects, as ESM (`import`) and as CommonJS (`require()`, which
 *   Node 20.19+ and 22.12+ allow for ESM without top-level await), and `heapless --version` through the bin;
 * - type-checks a client app against @heapless/client alone (installed by itself: no server package in its
 *   node_modules), `connect<KvActor>()` typed, with `skipLibCheck: false` and no @types/node.
 *
 * Prints the packed size of each package and one line per check; exits 1 if any failed.
 * Environment: HEAPLESS_PACK_KEEP=1 keeps the temporary folder (its path is printed).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM = 'pnpm@10.34.9';
const PACKAGES = ['struct', 'engine', 'level', 'offheap', 'client', 'replica', 'actor'];
const root = fileURLToPath(new URL('..', import.meta.url));
/**
 * The environment of a user's shell: this process's, less the `npm_*` settings a package manager gives the scripts it
 * runs (under `pnpm test`, npm would warn of pnpm's own settings, `catalog` and the like, as unknown to it).
 */
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))),
  PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
};

/** Whether `version` (x.y.z) is in `range`, written as our `engines` are: `^x.y.z` or `>=x.y.z` joined by `||`. */
function admits(range, version) {
  const v = version.split('.').map(Number);
  const atLeast = (w) => (v[0] !== w[0] ? v[0] > w[0] : v[1] !== w[1] ? v[1] > w[1] : v[2] >= w[2]);
  return range.split('||').some((part) => {
    const m = /^\s*(\^|>=)\s*(\d+)\.(\d+)\.(\d+)\s*$/.exec(part);
    if (m === null) throw new Error(`engines range not understood: ${range}`);
    const w = m.slice(2).map(Number);
    return atLeast(w) && (m[1] === '>=' || v[0] === w[0]);
  });
}

const refused = PACKAGES.filter((name) => {
  const pkg = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8'));
  return !admits(pkg.engines.node, process.versions.node);
});
if (refused.length > 0) {
  // The check installs every package together; on a Node some of them do not promise, npm rightly warns.
  process.stdout.write(
    `pack-check: not run on Node ${process.version}: outside the engines of ${refused.map((n) => `@heapless/${n}`).join(', ')}\n`,
  );
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'heapless-pack-'));
const results = [];

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status ?? 1, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function check(name, ok, detail = '') {
  results.push({ name, ok });
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail === '' ? '' : `\n${detail.trimEnd()}`}\n`);
}

/** Install output lines that warn, split into ours (fail) and the others' (noted); pnpm's boxes count as one line. */
function warnings(out) {
  const lines = out
    .replace(/╭[^╮]*╮([\s\S]*?)╰[^╯]*╯/g, (_, box) => box.replace(/[│\s]+/g, ' '))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /warn|EBADENGINE|Unsupported engine|Failed to create bin|Ignored build scripts/i.test(l));
  const ours = lines.filter((l) => /heapless|EBADENGINE|Unsupported engine/i.test(l));
  return { ours, others: lines.filter((l) => !ours.includes(l)) };
}

// --- pack ---
const tarballs = join(work, 'tarballs');
mkdirSync(tarballs);
const deps = {};
for (const name of PACKAGES) {
  const r = run('npx', ['-y', PNPM, 'pack', '--pack-destination', tarballs], join(root, 'packages', name));
  const file = readdirSync(tarballs).find((f) => f.startsWith(`heapless-${name}-`));
  check(`pack @heapless/${name}`, r.status === 0 && file !== undefined, r.status === 0 ? '' : r.out);
  if (file === undefined) continue;
  deps[`@heapless/${name}`] = `file:${join(tarballs, file)}`;
  // Without a login npm says so even on a dry run; any other warning is the package's.
  const publish = run('npm', ['publish', '--dry-run', join(tarballs, file)], tarballs);
  const publishWarnings = publish.out.split('\n').filter((l) => /warn/i.test(l) && !/logged in/.test(l));
  check(
    `npm publish --dry-run @heapless/${name}`,
    publish.status === 0 && publishWarnings.length === 0,
    publish.status === 0 ? publishWarnings.join('\n') : publish.out,
  );
  process.stdout.write(`     ${file}: ${(statSync(join(tarballs, file)).size / 1024).toFixed(1)} KiB packed\n`);
}

// --- the README uses, as ESM and as CommonJS ---
const USES = `
const { mkdtempSync, rmSync } = await load('node:fs');
const { tmpdir } = await load('node:os');
const { join } = await load('node:path');
const dir = mkdtempSync(join(tmpdir(), 'heapless-use-'));
try {
  const { StructLayout, textDecoderReader, utf8Type } = await load('@heapless/struct');
  const errors = {
    layout: (m) => new TypeError(m),
    value: (m) => new TypeError(m),
    overflow: (m) => new RangeError(m),
    size: (m) => new RangeError(m),
  };
  const User = new StructLayout(
    { id: 'u32', name: utf8Type(24, errors) },
    { errors, readUtf8: textDecoderReader(new TextDecoder()) },
  );
  if (User.decode(User.encode({ id: 7, name: 'ada' })).name !== 'ada') throw new Error('@heapless/struct: decode');

  const { Engine } = await load('@heapless/engine');
  const db = await Engine.open(join(dir, 'engine'));
  await db.put('user:1', 'Ada');
  if (new TextDecoder().decode(db.getSync('user:1')) !== 'Ada') throw new Error('@heapless/engine: get');
  await db.close();

  const { HeaplessLevel } = await load('@heapless/level');
  const level = new HeaplessLevel(join(dir, 'level'), { valueEncoding: 'json' });
  await level.put('user:1', { name: 'Ada' });
  if ((await level.get('user:1')).name !== 'Ada') throw new Error('@heapless/level: get');
  await level.close();

  const { OffHeapMap } = await load('@heapless/offheap');
  const users = new OffHeapMap();
  users.set('u:1', { name: 'Ada', age: 36 });
  if (users.get('u:1').age !== 36) throw new Error('@heapless/offheap: get');
  await users.close();

  const { CheckpointStore, Follower } = await load('@heapless/replica');
  if (typeof CheckpointStore !== 'function' || typeof Follower !== 'function') throw new Error('@heapless/replica');

  const { Actor, publish, spawn } = await load('@heapless/actor');
  const { connect } = await load('@heapless/client');
  class Counter extends Actor {
    static exposed = ['add'];
    n = 0;
    add(d) {
      return (this.n += d);
    }
  }
  const ref = spawn(new Counter(), { mailbox: 1024, overflow: 'wait' });
  await ref.add(1);
  const server = await publish(ref, { port: 0, token: 's3cret' });
  const counter = await connect(server.url, { token: 's3cret' });
  const [a, b] = await Promise.all([counter.add(1), counter.add(2)]);
  if (a !== 2 || b !== 4) throw new Error('@heapless/client: add answered ' + a + ', ' + b);
  await counter.close();
  await server.close();
  await ref.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log('uses ran');
`;

function runUses(project, label) {
  writeFileSync(join(project, 'uses.mjs'), `const load = (m) => import(m);\n${USES}`);
  writeFileSync(
    join(project, 'uses.cjs'),
    `const load = async (m) => require(m);\n(async () => {\n${USES}\n})().catch((e) => { console.error(e); process.exit(1); });\n`,
  );
  for (const file of ['uses.mjs', 'uses.cjs']) {
    const r = run(process.execPath, [file], project);
    check(
      `${label}: README uses (${file.endsWith('.mjs') ? 'ESM import' : 'CommonJS require'})`,
      r.status === 0 && /uses ran/.test(r.out),
      r.status === 0 ? '' : r.out,
    );
  }
  const bin = run(
    process.execPath,
    [join(project, 'node_modules', '@heapless', 'actor', 'bin', 'heapless.js'), '--version'],
    project,
  );
  const viaBin = run(join(project, 'node_modules', '.bin', 'heapless'), ['--version'], project);
  check(
    `${label}: heapless --version`,
    bin.status === 0 && viaBin.status === 0 && /^\d+\.\d+\.\d+/.test(viaBin.out),
    `${bin.out}${viaBin.out}`,
  );
}

function project(name, dependencies, extra = {}) {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, dependencies, ...extra }, null, 2),
  );
  return dir;
}

function install(label, dir, cmd, args) {
  const r = run(cmd, args, dir);
  const w = warnings(r.out);
  check(`${label}: install`, r.status === 0, r.status === 0 ? '' : r.out);
  check(`${label}: no install warning of ours`, w.ours.length === 0, w.ours.join('\n'));
  if (w.others.length > 0)
    process.stdout.write(`     notes (not ours):\n${w.others.map((l) => `       ${l}`).join('\n')}\n`);
  return r.status === 0;
}

if (Object.keys(deps).length === PACKAGES.length) {
  // npm resolves a tarball's dependencies on the other @heapless packages to the tarballs given beside it; pnpm
  // resolves each package's dependencies on its own, so the tarballs are also named as overrides.
  const npmProject = project('npm-app', deps);
  if (install('npm', npmProject, 'npm', ['install', '--no-audit', '--no-fund'])) runUses(npmProject, 'npm');
  const pnpmProject = project('pnpm-app', deps, { pnpm: { overrides: deps } });
  if (install('pnpm', pnpmProject, 'npx', ['-y', PNPM, 'install'])) runUses(pnpmProject, 'pnpm');

  // A client app: @heapless/client alone, its types checked strictly without Node's.
  const client = project(
    'client-app',
    {
      '@heapless/client': deps['@heapless/client'],
      '@heapless/struct': deps['@heapless/struct'],
    },
    { type: 'module' },
  );
  if (install('client-only npm', client, 'npm', ['install', '--no-audit', '--no-fund'])) {
    const ls = run('npm', ['ls', '--all', '--parseable'], client);
    const server = ls.out
      .split('\n')
      .filter((l) => /node_modules\/(@heapless\/(actor|offheap|engine|replica)|fastify|@types\/node)$/.test(l));
    check('client-only: no server package and no @types/node installed', server.length === 0, server.join('\n'));
    writeFileSync(
      join(client, 'app.ts'),
      `import { connect, httpClient, type KvActor } from '@heapless/client';

const kv = await connect<KvActor>('ws://127.0.0.1:7070/v1/ws');
const value: Uint8Array | undefined = await kv.get('user:1');
const page = await kv.scan({ prefix: 'user:', limit: 10 });
const next: string | undefined = page.cursor;
const stats = await kv.stats();
const entries: number = stats.entries;
for await (const [sequence, key] of kv.watch('user:')) console.log(sequence, key, value, next, entries);
await kv.close();
await httpClient<KvActor>('http://127.0.0.1:7070').size();
`,
    );
    // As Node resolves it (the `node` condition: dist/node.d.ts) and as a bundler for a browser does (browser.d.ts).
    for (const [resolution, module] of [
      ['nodenext', 'nodenext'],
      ['bundler', 'esnext'],
    ]) {
      const config = `tsconfig.${resolution}.json`;
      writeFileSync(
        join(client, config),
        JSON.stringify({
          compilerOptions: {
            target: 'es2022',
            module,
            moduleResolution: resolution,
            lib: ['es2022', 'dom', 'dom.iterable', 'dom.asynciterable'],
            types: [],
            strict: true,
            skipLibCheck: false,
            noEmit: true,
          },
          files: ['app.ts'],
        }),
      );
      const tsc = run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], client);
      check(`client-only: tsc (${resolution}), skipLibCheck false, no @types/node`, tsc.status === 0, tsc.out);
    }
  }
}

if (process.env.HEAPLESS_PACK_KEEP === '1') process.stdout.write(`kept ${work}\n`);
else rmSync(work, { recursive: true, force: true });
const failed = results.filter((r) => !r.ok).length;
process.stdout.write(`\npack-check on Node ${process.version}: ${results.length - failed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
