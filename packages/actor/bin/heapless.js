#!/usr/bin/env node
// The `heapless` command as installed: a committed file that loads the compiled command from dist/. The bin must
// exist before the build (a workspace install links it then, and pnpm warns of a missing target); dist/ exists only
// after `tsc -b`, and in a packed tarball.
const cli = new URL('../dist/cli.js', import.meta.url);
try {
  await import(cli.href);
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && err.url === cli.href) {
    process.stderr.write(`heapless: ${cli.pathname} is missing: build the package first (pnpm build)\n`);
    process.exit(1);
  }
  throw err;
}
