#!/usr/bin/env node
/**
 * Builds the native helper of @heapless/offheap with the system's C++ compiler; `pnpm build` runs it, installing the
 * package does not (the package ships what it built). Two parts:
 *
 *   prebuilds/<target>/heapless_offheap.node
 *     The helper, on Node-API version 8 (native/heapless_offheap.cc, native/node_api_shared.cc): one binary for
 *     this platform (<target>: src/persist/native-target.ts, e.g. linux-x64-glibc) that every Node from 20 on and
 *     Bun load. The package's `files` include it; src/persist/native.ts loads it first.
 *   dist/native/abi<process.versions.modules>/heapless_offheap_v8.node
 *     Only where the Node running this script cannot wrap mapped memory in a SharedArrayBuffer through Node-API
 *     (Node 20, Node 22 before 22.23, 24 before 24.22): that one call through V8 itself (native/heapless_offheap_v8.cc),
 *     for this Node's ABI only, since V8's C++ API has no stable ABI. Run this script under each such Node to map
 *     images there; elsewhere images load with plain reads.
 *
 * Each folder also gets build.json (what was built from what, or why not; the loader reports it) and build.log (the
 * compiler's output). The package works without either part, so a build that fails is one line on stderr and its
 * reason in build.json, never a failed build. Nothing is rebuilt while build.json records a build of the same sources,
 * compiler and flags (and, for the V8 part, the same Node); a binary with no build.json, the one an installed package
 * ships, is kept as long as it loads (a user runs this script for the V8 part only).
 *
 * Options: --out DIR builds into DIR/prebuilds/... and DIR/dist/native/... instead of the package's; --mapper v8
 * builds and uses the V8 part even where Node-API maps (tests of that part on every Node).
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
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nativeTarget } from '../dist/persist/native-target.js';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const sources = join(pkg, 'native');
const { values: opts } = parseArgs({ options: { out: { type: 'string' }, mapper: { type: 'string' } } });
if (opts.mapper !== undefined && opts.mapper !== 'v8') throw new Error(`--mapper takes only v8, not ${opts.mapper}`);
const root = resolve(opts.out ?? pkg);
const target = nativeTarget();
const node = `Node ${process.version} (ABI ${process.versions.modules})`;
const headers = join(dirname(process.execPath), '..', 'include', 'node');
const cxx = process.env.CXX || 'c++';
// The helper's interface version (native/mapped_region.h, src/persist/native.ts): a build of another is not used.
const HELPER_VERSION = 2;

// The Node-API part is plain C++17; V8's own headers need C++20 from V8 13 (Node 24) on. -isystem: warnings of
// the headers are not ours.
const common = ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-pthread', '-isystem', headers];
const parts = {
  helper: {
    name: `the native helper for ${target}`,
    dir: join(root, 'prebuilds', target),
    file: 'heapless_offheap.node',
    flags: ['-std=c++17', ...common],
    sources: ['heapless_offheap.cc', 'node_api_shared.cc'],
  },
  v8: {
    name: `its V8 part for ${node}`,
    dir: join(root, 'dist', 'native', `abi${process.versions.modules}`),
    file: 'heapless_offheap_v8.node',
    flags: ['-std=c++20', ...common],
    sources: ['heapless_offheap_v8.cc'],
  },
};

/** Compiles a part into its folder (through a temporary file, so a loaded older build is never overwritten in place); null or why not. */
function compile(part, includes) {
  const output = join(part.dir, part.file);
  const log = join(part.dir, 'build.log');
  const tmp = `${output}.${process.pid}.tmp`;
  const args = [
    ...part.flags,
    ...includes.flatMap((d) => ['-isystem', d]),
    '-o',
    tmp,
    ...part.sources.map((s) => join(sources, s)),
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

/** Loads a built part into this process to check it; the module, or why it cannot be used. */
function load(part) {
  try {
    const m = createRequire(import.meta.url)(join(part.dir, part.file));
    if (m.helperVersion !== HELPER_VERSION)
      return `${part.file} has interface ${m.helperVersion}, not ${HELPER_VERSION}`;
    return m;
  } catch (err) {
    return `${part.file} does not load: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** What a build of `part` depends on: its sources, the compiler, the flags (and for the V8 part, this Node). */
function sourceKey(part, addonApi) {
  const h = createHash('sha256');
  h.update(JSON.stringify({ target, cxx, flags: part.flags.slice(0, -2), sources: part.sources }));
  if (part === parts.v8) h.update(process.version);
  h.update(addonApi === null ? 'no node-addon-api' : readFileSync(join(addonApi, 'package.json')));
  for (const f of readdirSync(sources).sort()) h.update(f).update(readFileSync(join(sources, f)));
  return h.digest('hex');
}

/** Builds `part` unless build.json records a good build of the same key; the build's record. */
function buildPart(part, key, build) {
  let previous = null;
  try {
    previous = JSON.parse(readFileSync(join(part.dir, 'build.json'), 'utf8'));
  } catch {
    // no earlier build here
  }
  if (previous?.key === key && previous.problem === null && existsSync(join(part.dir, part.file))) {
    return { ...previous, fresh: false };
  }
  // A binary without a record is the one the package shipped (its files hold no build.json): kept if it loads.
  if (previous === null && existsSync(join(part.dir, part.file)) && typeof load(part) !== 'string') {
    return { key, file: part.file, problem: null, fresh: false };
  }
  mkdirSync(part.dir, { recursive: true });
  writeFileSync(join(part.dir, 'build.log'), '');
  rmSync(join(part.dir, part.file), { force: true });
  const problem = build();
  const record = { key, file: problem === null ? part.file : null, problem };
  if (part === parts.helper) record.target = target;
  else record.node = process.version;
  writeFileSync(join(part.dir, 'build.json'), `${JSON.stringify(record, null, 2)}\n`);
  return { ...record, fresh: true };
}

function buildHelper(addonApi) {
  if (process.platform !== 'linux') return `no native build on ${process.platform}`;
  if (!existsSync(join(headers, 'node_api.h'))) return `no Node.js headers at ${headers}`;
  if (addonApi === null) return 'node-addon-api is not installed';
  const failed = compile(parts.helper, [addonApi]);
  if (failed !== null) return failed;
  const helper = load(parts.helper);
  return typeof helper === 'string' ? helper : null;
}

function buildV8() {
  const failed = compile(parts.v8, []);
  if (failed !== null) return failed;
  const v8 = load(parts.v8);
  return typeof v8 === 'string' ? v8 : null;
}

let addonApi = null;
try {
  addonApi = dirname(createRequire(join(pkg, 'package.json')).resolve('node-addon-api/package.json'));
} catch {
  // reported by buildHelper()
}
const where = (part) => relative(process.cwd(), join(part.dir, part.file)) || part.file;
const helper = buildPart(parts.helper, sourceKey(parts.helper, addonApi), () => buildHelper(addonApi));
if (helper.problem !== null) {
  console.warn(
    `@heapless/offheap: native helper NOT built for ${target}: ${helper.problem}; map images load with plain reads`,
  );
} else {
  const module = load(parts.helper);
  const viaNodeApi = typeof module !== 'string' && typeof module.mapSections === 'function' && opts.mapper !== 'v8';
  // A V8 part left from an earlier Node of this ABI, or from before a Node update that brought the Node-API call, is
  // never loaded where Node-API maps; a helper of the per-ABI layout this script used to build is never loaded.
  rmSync(join(parts.v8.dir, 'heapless_offheap.node'), { force: true });
  if (viaNodeApi) {
    if (helper.fresh) {
      console.log(
        `@heapless/offheap: native helper built in ${where(parts.helper)}; map images are mapped through Node-API`,
      );
    }
  } else {
    const v8 = buildPart(parts.v8, sourceKey(parts.v8, addonApi), buildV8);
    if (v8.problem !== null) {
      console.warn(
        `@heapless/offheap: native helper built in ${where(parts.helper)}, but ${parts.v8.name} NOT built (${v8.problem}); map images load with plain reads on this Node`,
      );
    } else if (helper.fresh || v8.fresh) {
      console.log(
        `@heapless/offheap: native helper built in ${where(parts.helper)}, and ${parts.v8.name} in ${where(parts.v8)}; map images are mapped through V8 on this Node`,
      );
    }
  }
}
