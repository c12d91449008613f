#!/usr/bin/env node
/**
 * Builds the native helper of @heapless/offheap for the Node.js running this script, with the system's C++ compiler
 * against that Node's headers (and node-addon-api's), into dist/native/abi<process.versions.modules>/. One
 * node_modules then serves several Node versions: each loads the build for its ABI (src/persist/native.ts).
 *
 *   heapless_offheap.node     the helper, through Node-API (native/heapless_offheap.cc, native/node_api_shared.cc)
 *   heapless_offheap_v8.node  only where this Node's Node-API cannot wrap mapped memory in a SharedArrayBuffer (Node
 *                             20): that part through V8 itself (native/heapless_offheap_v8.cc)
 *   build.json                what was built from what, or why not; src/persist/native.ts reports it at run time
 *   build.log                 the compiler's output
 *
 * The package works without the helper (map images then load with plain reads), so a build that fails is one line
 * on stderr and its reason in build.json, never a failed install. Nothing is rebuilt while build.json records a
 * build of the same sources, compiler, flags and Node.
 *
 * Options: --out DIR builds into DIR instead; --mapper v8 builds and uses the V8 part even where Node-API maps (tests
 * of that part on every Node).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const sources = join(pkg, 'native');
const { values: opts } = parseArgs({ options: { out: { type: 'string' }, mapper: { type: 'string' } } });
if (opts.mapper !== undefined && opts.mapper !== 'v8') throw new Error(`--mapper takes only v8, not ${opts.mapper}`);
const out = resolve(opts.out ?? join(pkg, 'dist', 'native', `abi${process.versions.modules}`));
const node = `Node ${process.version} (ABI ${process.versions.modules})`;
const headers = join(dirname(process.execPath), '..', 'include', 'node');
const cxx = process.env.CXX || 'c++';
const log = join(out, 'build.log');

// The Node-API part is plain C++17; V8's own headers need C++20 from V8 13 (Node 24) on. -isystem: warnings of
// the headers are not ours.
const common = ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-pthread', '-isystem', headers];
const targets = {
  helper: {
    file: 'heapless_offheap.node',
    flags: ['-std=c++17', ...common],
    sources: ['heapless_offheap.cc', 'node_api_shared.cc'],
  },
  v8: { file: 'heapless_offheap_v8.node', flags: ['-std=c++20', ...common], sources: ['heapless_offheap_v8.cc'] },
};

/**
 * What build.json records: `helper` (the Node-API build's file, or null), `mapper` ('node-api' or 'v8': which
 * binding maps image sections; null: none, images load with plain reads) and `problem` (why something was not
 * built, null when all was).
 */
function finish(result) {
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'build.json'),
    `${JSON.stringify({ node: process.version, abi: process.versions.modules, key, ...result }, null, 2)}\n`,
  );
  if (result.helper === null) {
    console.warn(
      `@heapless/offheap: native helper NOT built for ${node}: ${result.problem}; map images load with plain reads`,
    );
  } else if (result.mapper === null) {
    console.warn(
      `@heapless/offheap: native helper built for ${node} without mapping (${result.problem}); map images load with plain reads`,
    );
  } else {
    console.log(
      `@heapless/offheap: native helper built for ${node}; map images are mapped through ${result.mapper === 'v8' ? 'V8' : 'Node-API'}`,
    );
  }
}

/** Compiles a target into `out` (through a temporary file, so a loaded older build is never overwritten in place); null or why not. */
function compile(target, includes) {
  const output = join(out, target.file);
  const tmp = `${output}.${process.pid}.tmp`;
  const args = [
    ...target.flags,
    ...includes.flatMap((d) => ['-isystem', d]),
    '-o',
    tmp,
    ...target.sources.map((s) => join(sources, s)),
  ];
  appendFileSync(log, `$ ${cxx} ${args.join(' ')}\n`);
  const r = spawnSync(cxx, args, { encoding: 'utf8' });
  appendFileSync(log, `${r.stdout ?? ''}${r.stderr ?? ''}`);
  if (r.error !== undefined) return `${cxx}: ${r.error.message}`;
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    const first = `${r.stdout}${r.stderr}`.split('\n').find((l) => /\berror\b/.test(l));
    return `${cxx} exited with ${r.status ?? r.signal}${first === undefined ? '' : ` (${first.trim()})`}; see ${log}`;
  }
  renameSync(tmp, output);
  return null;
}

/** Loads a build into this process to check it is one for this Node; the module, or why it cannot be used. */
function load(target) {
  try {
    const m = createRequire(import.meta.url)(join(out, target.file));
    if (m.builtFor !== process.version) return `${target.file} was compiled against the headers of Node ${m.builtFor}`;
    return m;
  } catch (err) {
    return `${target.file} does not load: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function sourceKey(addonApi) {
  const h = createHash('sha256');
  h.update(JSON.stringify({ node: process.version, arch: process.arch, cxx, targets, mapper: opts.mapper ?? null }));
  h.update(addonApi === null ? 'no node-addon-api' : readFileSync(join(addonApi, 'package.json')));
  for (const f of readdirSync(sources).sort()) h.update(f).update(readFileSync(join(sources, f)));
  return h.digest('hex');
}

function build(addonApi) {
  if (process.platform !== 'linux')
    return { helper: null, mapper: null, problem: `no native build on ${process.platform}` };
  if (!existsSync(join(headers, 'node_api.h')))
    return { helper: null, mapper: null, problem: `no Node.js headers at ${headers}` };
  if (addonApi === null) return { helper: null, mapper: null, problem: 'node-addon-api is not installed' };
  mkdirSync(out, { recursive: true });
  writeFileSync(log, '');
  for (const t of Object.values(targets)) rmSync(join(out, t.file), { force: true });
  const failed = compile(targets.helper, [addonApi]);
  if (failed !== null) return { helper: null, mapper: null, problem: failed };
  const helper = load(targets.helper);
  if (typeof helper === 'string') return { helper: null, mapper: null, problem: helper };
  if (typeof helper.mapSections === 'function' && opts.mapper !== 'v8')
    return { helper: targets.helper.file, mapper: 'node-api', problem: null };
  const v8Failed = compile(targets.v8, []);
  const v8 = v8Failed ?? load(targets.v8);
  if (typeof v8 === 'string') return { helper: targets.helper.file, mapper: null, problem: `its V8 part: ${v8}` };
  return { helper: targets.helper.file, mapper: 'v8', problem: null };
}

let addonApi = null;
try {
  addonApi = dirname(createRequire(join(pkg, 'package.json')).resolve('node-addon-api/package.json'));
} catch {
  // reported by build()
}
const key = sourceKey(addonApi);
let previous = null;
try {
  previous = JSON.parse(readFileSync(join(out, 'build.json'), 'utf8'));
} catch {
  // no earlier build here
}
const upToDate =
  previous?.key === key &&
  previous.problem === null &&
  existsSync(join(out, targets.helper.file)) &&
  (previous.mapper !== 'v8' || existsSync(join(out, targets.v8.file)));
if (!upToDate) finish(build(addonApi));
