#!/usr/bin/env node
/**
 * Builds the optional native helpers (native/heapless_offheap.cc) into dist/heapless_offheap.node with the
 * system's C++ compiler against the headers of the Node.js running this script. The package works without them
 * (it then reads a map image with plain reads instead of mapping it), so a machine without a compiler or headers
 * gets a notice, not a failure. Skips the build when the output is newer than the source and this Node's headers.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(pkg, 'native', 'heapless_offheap.cc');
const output = join(pkg, 'dist', 'heapless_offheap.node');
const headers = join(dirname(process.execPath), '..', 'include', 'node');

function notice(why) {
  console.warn(`@heapless/offheap: native helpers not built (${why}); map images load with plain reads instead`);
}

if (process.platform !== 'linux') {
  notice(`no build for ${process.platform}`);
} else if (!existsSync(join(headers, 'node.h'))) {
  notice(`no Node.js headers at ${headers}`);
} else if (
  existsSync(output) &&
  statSync(output).mtimeMs > statSync(source).mtimeMs &&
  statSync(output).mtimeMs > statSync(join(headers, 'node_version.h')).mtimeMs
) {
  // Up to date.
} else {
  mkdirSync(dirname(output), { recursive: true });
  rmSync(output, { force: true }); // a failed build must not leave an older helper in place
  const cxx = process.env.CXX || 'c++';
  const args = ['-O2', '-std=c++17', '-Wall', '-shared', '-fPIC', '-pthread', `-I${headers}`, '-o', output, source];
  const r = spawnSync(cxx, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.error !== undefined) notice(`${cxx}: ${r.error.message}`);
  else if (r.status !== 0) notice(`${cxx} exited with ${r.status}`);
}
