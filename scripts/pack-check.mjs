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
 *   Node 20.19+ and 22.12+ allow for ESM without top-level await), a persisted map reopened from its image with the
 *   loader this runtime should have (`mapped` where its Node-API can map), and `heapless --version` through the bin;
 * - type-checks a client app against @heapless/client alone (installed by itself: no server package in its
 *   node_modules), `connect<KvActor>()` typed, with `skipLibCheck: false` and no @types/node;
 * - installs the command as users will once it is published, `npm install -g heapless` and `npx heapless serve` from
 *   an empty folder, against a registry on a loopback port that serves the tarballs by name (local-registry.mjs).
 *
 * With `--bun RANGE` it checks Bun instead: the embedded packages and the client installed with `bun install`, their
 * uses run under the newest Bun in RANGE (runtime-binary.mjs), the client calling this repository's server.
 *
 * Prints the packed size of each package, how long an install took to the first map opened from its image, and one
 * line per check; exits 1 if any failed.
 * Environment: HEAPLESS_PACK_KEEP=1 keeps the temporary folder (its path is printed).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalRegistry } from './local-registry.mjs';
import { CLIENT_USE, EMBEDDED_USES, SERVER_USES } from './pack-uses.mjs';
import { bunFor } from './runtime-binary.mjs';

const PNPM = 'pnpm@10.34.9';
/** The package folders; `heapless` is the command under its own name (`npx heapless serve`), the others are scoped. */
const PACKAGES = ['struct', 'engine', 'level', 'offheap', 'client', 'replica', 'actor', 'heapless'];
/** The packages Bun runs (the embedded ones and the client). */
const EMBEDDED = ['struct', 'engine', 'level', 'offheap', 'client'];
const npmName = (name) => (name === 'heapless' ? name : `@heapless/${name}`);
/** `--bun RANGE`: check the embedded packages under the newest Bun in RANGE instead of under this Node. */
const bunAt = process.argv.indexOf('--bun');
const bunRange = bunAt === -1 ? null : (process.argv[bunAt + 1] ?? '1.4');
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
    `pack-check: not run on Node ${process.version}: outside the engines of ${refused.map(npmName).join(', ')}\n`,
  );
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'heapless-pack-'));
const results = [];

function run(cmd, args, cwd, extra = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status ?? 1, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** As {@link run}, without blocking this process's event loop (which serves the local registry meanwhile). */
function runAsync(cmd, args, cwd, extra = {}) {
  const child = spawn(cmd, args, { cwd, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  return new Promise((resolve) => {
    child.on('error', (err) => (out += String(err)));
    child.on('close', (status) => resolve({ status: status ?? 1, out }));
  });
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
// One pnpm for all of them: the README's command for building the tarballs.
const packed = run('npx', ['-y', PNPM, '-r', '--filter', './packages/*', 'pack', '--pack-destination', tarballs], root);
for (const name of PACKAGES) {
  const prefix = name === 'heapless' ? /^heapless-\d/ : new RegExp(`^heapless-${name}-\\d`);
  const file = readdirSync(tarballs).find((f) => prefix.test(f));
  check(`pack ${npmName(name)}`, packed.status === 0 && file !== undefined, packed.status === 0 ? '' : packed.out);
  if (file === undefined) continue;
  deps[npmName(name)] = `file:${join(tarballs, file)}`;
  process.stdout.write(`     ${file}: ${(statSync(join(tarballs, file)).size / 1024).toFixed(1)} KiB packed\n`);
  if (bunRange !== null) continue; // the Node runs check publishing
  // Without a login npm says so even on a dry run; any other warning is the package's.
  const publish = run('npm', ['publish', '--dry-run', join(tarballs, file)], tarballs);
  const publishWarnings = publish.out.split('\n').filter((l) => /warn/i.test(l) && !/logged in/.test(l));
  check(
    `npm publish --dry-run ${npmName(name)}`,
    publish.status === 0 && publishWarnings.length === 0,
    publish.status === 0 ? publishWarnings.join('\n') : publish.out,
  );
}

// --- the README uses, as ESM and as CommonJS (pack-uses.mjs) ---
/** Whether this runtime's Node-API can map an image (node_api_create_external_sharedarraybuffer): 'mapped' expected. */
function mapsImages(runtime) {
  if (runtime.bun !== undefined) return true;
  const [major, minor] = runtime.node.split('.').map(Number);
  return major >= 26 || (major === 24 && minor >= 22) || (major === 22 && minor >= 23);
}

/**
 * Writes the uses into `project` and runs them with `cmd` as ESM and as CommonJS; checks that the map's image was
 * mapped where the runtime allows it. Returns when the first run opened the map from its image (ms since the epoch).
 */
function runUses(project, label, { cmd = process.execPath, uses, env: extra = {}, runtime = process.versions }) {
  writeFileSync(join(project, 'uses.mjs'), `const load = (m) => import(m);\n${uses}\nconsole.log('uses ran');\n`);
  writeFileSync(
    join(project, 'uses.cjs'),
    `const load = async (m) => require(m);\n(async () => {\n${uses}\nconsole.log('uses ran');\n})().catch((e) => { console.error(e); process.exit(1); });\n`,
  );
  let opened = null;
  const expected = mapsImages(runtime) ? 'mapped' : 'read';
  for (const file of ['uses.mjs', 'uses.cjs']) {
    const r = run(cmd, [file], project, extra);
    const loader = /first open from the image: (\w+) at (\d+)/.exec(r.out);
    opened ??= loader === null ? null : Number(loader[2]);
    check(
      `${label}: README uses (${file.endsWith('.mjs') ? 'ESM import' : 'CommonJS require'})`,
      r.status === 0 && /uses ran/.test(r.out) && loader?.[1] === expected,
      r.status === 0 && loader?.[1] === expected ? '' : `the image should be ${expected}\n${r.out}`,
    );
  }
  return opened;
}

/** `heapless --version` through the project's bin and through the package's file. */
function checkBin(project, label) {
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

/**
 * Starts `heapless serve --memory --port 0 --token s3cret` (`cmd` and `args` before `serve`) in `cwd`, in a process
 * group of its own, checks that it answers /healthz, and resolves to `{ url, stop }`, or null when it did not start
 * within `ms` (its output then goes into the failed check). `stop` sends SIGTERM to the group, as a terminal's Ctrl-C
 * reaches every process of the foreground job (npx does not pass a signal on to the command it runs), and resolves
 * to whether the server logged its clean stop.
 */
function startServe(label, cmd, args, cwd, extra = {}, ms = 120_000) {
  const child = spawn(cmd, [...args, 'serve', '--memory', '--port', '0', '--token', 's3cret'], {
    cwd,
    env: { ...env, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(null), ms);
    let done = false;
    const finish = async (listening) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      let healthy = false;
      if (listening !== null) healthy = (await fetch(`${listening.http}/healthz`).catch(() => null))?.ok === true;
      check(`${label}: serve answers /healthz`, healthy, healthy ? '' : out);
      const stop = async () => {
        process.kill(-child.pid, 'SIGTERM');
        await exited;
        return /"msg":"stopped"/.test(out);
      };
      if (healthy) return resolve({ url: listening.url, stop });
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      await exited;
      resolve(null);
    };
    const read = (chunk) => {
      out += chunk;
      for (const line of out.split('\n')) {
        if (!line.includes('"listening"')) continue;
        try {
          const { url, http } = JSON.parse(line);
          if (url !== undefined) return finish({ url, http });
        } catch {}
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', (c) => (out += c));
    void exited.then(() => finish(null));
  });
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

function install(label, dir, cmd, args, extra = {}) {
  return installed(label, run(cmd, args, dir, extra));
}

/** Checks an install's outcome `r`: it passed, with no warning of ours; the others' warnings are printed. */
function installed(label, r) {
  const w = warnings(r.out);
  check(`${label}: install`, r.status === 0, r.status === 0 ? '' : r.out);
  check(`${label}: no install warning of ours`, w.ours.length === 0, w.ours.join('\n'));
  if (w.others.length > 0)
    process.stdout.write(`     notes (not ours):\n${w.others.map((l) => `       ${l}`).join('\n')}\n`);
  return r.status === 0;
}

/** Installs `dependencies` into a new project and runs the uses; prints how long install and first open took. */
function installAndUse(label, name, dependencies, extra, command, uses) {
  const dir = project(name, dependencies, extra);
  const started = Date.now();
  if (!install(label, dir, command.cmd, command.args)) return null;
  const installed = Date.now();
  const opened = runUses(dir, label, uses);
  if (opened !== null) {
    process.stdout.write(
      `     ${label}: install ${((installed - started) / 1000).toFixed(1)} s; from the install's start to the first ` +
        `OffHeapMap.open from its image ${((opened - started) / 1000).toFixed(1)} s\n`,
    );
  }
  return dir;
}

/** The command as users get it once published: `npm install -g heapless` and `npx heapless serve`, from any folder. */
async function checkCommand() {
  const upstream = run('npm', ['config', 'get', 'registry'], work).out.trim() || 'https://registry.npmjs.org/';
  const registry = await startLocalRegistry(tarballs, upstream.endsWith('/') ? upstream : `${upstream}/`);
  try {
    // A cache of its own, so that nothing unpublished stays in the user's npm cache.
    const published = { npm_config_registry: registry.url, npm_config_cache: join(work, 'npm-cache') };
    const anywhere = join(work, 'anywhere');
    mkdirSync(anywhere);
    const prefix = join(work, 'global');
    const args = ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', 'heapless'];
    if (installed('npm install -g heapless', await runAsync('npm', args, anywhere, published))) {
      const version = await runAsync(join(prefix, 'bin', 'heapless'), ['--version'], anywhere);
      check('npm install -g heapless: heapless --version', /^\d+\.\d+\.\d+/.test(version.out), version.out);
    }
    const server = await startServe('npx heapless', 'npx', ['-y', 'heapless'], anywhere, published);
    if (server !== null) check('npx heapless: stops cleanly on SIGTERM', await server.stop());
  } finally {
    await registry.close();
  }
}

const scoped = Object.fromEntries(Object.entries(deps).filter(([name]) => name !== 'heapless'));
if (Object.keys(deps).length === PACKAGES.length && bunRange !== null) {
  // Bun: the embedded packages and the client, installed with Bun's own package manager; the client calls a
  // server this repository runs on Node.
  const bun = bunFor(bunRange);
  const version = run(bun, ['--version'], work).out.trim();
  process.stdout.write(`     Bun ${version}\n`);
  const embedded = Object.fromEntries(EMBEDDED.map((name) => [npmName(name), deps[npmName(name)]]));
  const server = await startServe(
    'Bun: server',
    process.execPath,
    [join(root, 'packages/actor/bin/heapless.js')],
    work,
  );
  if (server !== null) {
    installAndUse(
      'bun',
      'bun-app',
      embedded,
      { overrides: embedded },
      { cmd: bun, args: ['install'] },
      {
        cmd: bun,
        uses: EMBEDDED_USES + CLIENT_USE,
        env: { HEAPLESS_USE_URL: server.url },
        runtime: { bun: version },
      },
    );
    check('Bun: server stops cleanly on SIGTERM', await server.stop());
  }
} else if (Object.keys(deps).length === PACKAGES.length) {
  // npm resolves a tarball's dependencies on the other @heapless packages to the tarballs given beside it; pnpm
  // resolves each package's dependencies on its own, so the tarballs are also named as overrides.
  const uses = { uses: EMBEDDED_USES + SERVER_USES };
  const npmArgs = ['install', '--no-audit', '--no-fund'];
  const npmProject = installAndUse('npm', 'npm-app', scoped, {}, { cmd: 'npm', args: npmArgs }, uses);
  if (npmProject !== null) checkBin(npmProject, 'npm');
  const pnpmProject = installAndUse(
    'pnpm',
    'pnpm-app',
    scoped,
    { pnpm: { overrides: scoped } },
    { cmd: 'npx', args: ['-y', PNPM, 'install'] },
    uses,
  );
  if (pnpmProject !== null) checkBin(pnpmProject, 'pnpm');
  await checkCommand();

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
